"""flows without dataset indexes: no read needs `flows` by source or target dataset

`ix_flows_source` and `ix_flows_target` held every flow by its dataset ends and its run's
start: 87 bytes of each medium event's derived rows on PostgreSQL (3.8 MB of 2,446 B an
event), kept current by every write. No answer reads them: walks run on the graph index,
which loads flows by run or owner (`upstream.store.graph_rows`), and the reads of the stored
flows by dataset (`upstream.store.walks`, what tests and the exactness benchmark check the
rows with) read nearly every flow. Dropping an index keeps every stored fact.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

#: The indexes dropped: name, then the columns they held.
_INDEXES = {
    "ix_flows_source": ["source_dataset_id", "started_at"],
    "ix_flows_target": ["target_dataset_id", "started_at"],
}


def upgrade() -> None:
    for name in _INDEXES:
        op.drop_index(name, table_name="flows")


def downgrade() -> None:
    for name, columns in _INDEXES.items():
        op.create_index(name, "flows", columns)
