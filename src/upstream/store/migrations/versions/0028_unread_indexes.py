"""indexes no read uses: the lineage links' by run and by job, the runs' by parent

`ix_lineage_links_run_id` held every link by its run, `ix_lineage_links_job_id` by the job
that stated it, and `ix_runs_parent_run_id` every run by its parent: 31 bytes of each medium
event's derived rows on PostgreSQL and 67 on SQLite (after `VACUUM FULL` / `VACUUM`), kept
current by every write. A run's
link is owned by the run (`owner_id` = `run_id`, and a declaration's link has no run), so
every read of a run's links asks by owner (`upstream.store.graph_rows`,
`upstream.store.run_datasets`, `upstream.store.prune`), on the owners' index; no read asks
for a job's links, nor for a run's children (the graph index reads every run's parent whole).
None of the three was scanned once while the medium benchmark's events were stored and its
358 recorded answers asked (`pg_stat_user_indexes`). Dropping an index keeps every stored
fact.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

#: The indexes dropped: name, then the table and the column they held.
_INDEXES = {
    "ix_lineage_links_run_id": ("lineage_links", "run_id"),
    "ix_lineage_links_job_id": ("lineage_links", "job_id"),
    "ix_runs_parent_run_id": ("runs", "parent_run_id"),
}


def upgrade() -> None:
    for name, (table, _) in _INDEXES.items():
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, (table, column) in _INDEXES.items():
        op.create_index(name, table, [column])
