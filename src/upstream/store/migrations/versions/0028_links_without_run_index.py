"""lineage links without a run index: a run's links are found by their owner, the run

`ix_lineage_links_run_id` held every link by its run: 27 bytes of each medium event's derived
rows on PostgreSQL and 28 on SQLite, kept current by every write. A run's link is owned by the
run (`owner_id` = `run_id`, and a declaration's link has no run), so every read of a run's
links asks by owner (`upstream.store.graph_rows`, `upstream.store.run_datasets`,
`upstream.store.prune`), on the owners' index. Dropping an index keeps every stored fact.

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


def upgrade() -> None:
    op.drop_index("ix_lineage_links_run_id", table_name="lineage_links")


def downgrade() -> None:
    op.create_index("ix_lineage_links_run_id", "lineage_links", ["run_id"])
