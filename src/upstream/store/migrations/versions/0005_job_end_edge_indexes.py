"""partial indexes on the edges with a job end

Dataset walks (`upstream.store.walks.reach`) step over the edges whose source or target is
a job. Nothing indexed them by type, so the walk's recursive statement read the whole
`edges` table (mostly field edges) for them on every call: seconds on a medium store.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_INDEXES = (
    ("ix_edges_from_job", "target_dataset_id", "source_type = 'job'"),
    ("ix_edges_to_job", "source_dataset_id", "target_type = 'job'"),
)


def upgrade() -> None:
    for name, column, where in _INDEXES:
        op.create_index(
            name,
            "edges",
            [column],
            postgresql_where=sa.text(where),
            sqlite_where=sa.text(where),
        )


def downgrade() -> None:
    for name, _, _ in _INDEXES:
        op.drop_index(name, table_name="edges")
