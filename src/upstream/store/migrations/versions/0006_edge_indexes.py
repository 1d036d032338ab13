"""partial indexes on the edges with a job end, and on field edges for lineage diffs

Dataset walks (`upstream.store.walks.reach`) step over the edges whose source or target is
a job. Nothing indexed them by type, so the walk's recursive statement read the whole
`edges` table (mostly field edges) for them on every call: seconds on a medium store.
A lineage diff reads the field edges into its datasets (one row per run that made each);
an index holding the columns it compares spares it the table rows and the grouping sort.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_FIELD_PAIR = ["target_dataset_id", "source_dataset_id", "source_field", "target_field", "run_id"]
_INDEXES = (
    ("ix_edges_from_job", ["target_dataset_id"], "source_type = 'job'"),
    ("ix_edges_to_job", ["source_dataset_id"], "target_type = 'job'"),
    ("ix_edges_field_pairs", _FIELD_PAIR, "target_field IS NOT NULL"),
)


def upgrade() -> None:
    for name, columns, where in _INDEXES:
        op.create_index(
            name,
            "edges",
            columns,
            postgresql_where=sa.text(where),
            sqlite_where=sa.text(where),
        )


def downgrade() -> None:
    for name, _, _ in _INDEXES:
        op.drop_index(name, table_name="edges")
