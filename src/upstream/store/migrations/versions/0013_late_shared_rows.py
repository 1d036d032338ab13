"""rows of one run may name jobs, datasets and sets written later in the same transaction

Concurrent writers queued on each other's row locks: a batch inserted or changed the jobs and
datasets it names first and held them for its whole transaction, so batches naming the same
ones waited in turn until the lock timeout answered 503. A write now stores its runs' rows
first and the rows batches share last, in one short ordered step
(`upstream.store.writer.write_shared_rows`). The foreign keys from a run's rows to those
shared rows become deferrable, so a write checks them after that step (`SET CONSTRAINTS ALL
DEFERRED`, then `IMMEDIATE`); every other statement still checks them at once. SQLite
defers its checks per transaction (`PRAGMA defer_foreign_keys`) and has nothing to change.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

#: (table, constraint) of each foreign key from a run's rows to a shared row.
_LATE = (
    ("runs", "fk_runs_job_id_jobs"),
    ("relations", "fk_relations_dataset_id_datasets"),
    ("relations", "fk_relations_job_id_jobs"),
    ("lineage_links", "fk_lineage_links_set_id_lineage_sets"),
    ("dataset_versions", "fk_dataset_versions_dataset_id_datasets"),
    ("run_operation_sets", "fk_run_operation_sets_operation_set_id_operation_sets"),
    ("run_operation_sets", "fk_run_operation_sets_job_id_jobs"),
)


def _alter(deferrable: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, constraint in _LATE:
        op.execute(f"ALTER TABLE {table} ALTER CONSTRAINT {constraint} {deferrable}")


def upgrade() -> None:
    _alter("DEFERRABLE INITIALLY IMMEDIATE")


def downgrade() -> None:
    _alter("NOT DEFERRABLE")
