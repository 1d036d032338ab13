"""relations with a named component indexed apart

Few producers name a component, so nearly every relation's component is "". A dataset-lineage
walk asks, for each relation it shows, which components are stored on it; this partial index
finds the named ones by dataset without reading the others (`upstream.store.walk_relations`).

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

_NAMED = sa.text("component <> ''")


def upgrade() -> None:
    op.create_index(
        "ix_relations_named_component",
        "relations",
        ["dataset_id"],
        postgresql_where=_NAMED,
        sqlite_where=_NAMED,
    )


def downgrade() -> None:
    op.drop_index("ix_relations_named_component", table_name="relations")
