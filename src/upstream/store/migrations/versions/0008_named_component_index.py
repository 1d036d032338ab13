"""the few relations a walk asks about indexed apart

Few producers name a component, so nearly every relation's component is "". A dataset-lineage
walk asks, for each relation it shows, which components are stored on it; a partial index
finds the named ones by dataset without reading the others (`upstream.store.walk_relations`).
Likewise every answer asks which of its datasets may be temporary to a workflow run: a
second partial index holds only the relations with a temporary mark or a lifecycle state.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: Each partial index on `relations` (by dataset): its name and its condition on PostgreSQL
#: and on SQLite, as the statements that use it write it.
_PARTIAL = (
    ("ix_relations_named_component", "component <> ''", "component <> ''"),
    (
        "ix_relations_marked",
        "temporary OR lifecycles IS NOT NULL",
        '"temporary" = 1 OR lifecycles IS NOT NULL',
    ),
)


def upgrade() -> None:
    for name, on_postgresql, on_sqlite in _PARTIAL:
        op.create_index(
            name,
            "relations",
            ["dataset_id"],
            postgresql_where=sa.text(on_postgresql),
            sqlite_where=sa.text(on_sqlite),
        )


def downgrade() -> None:
    for name, _, _ in _PARTIAL:
        op.drop_index(name, table_name="relations")
