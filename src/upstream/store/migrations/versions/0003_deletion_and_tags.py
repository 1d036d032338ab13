"""soft deletion of namespaces, datasets and jobs; tags on datasets and fields

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deletions",
        sa.Column("entity_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("entity_id", name=op.f("pk_deletions")),
    )
    op.create_table(
        "tags",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_tags")),
    )
    op.create_table(
        "dataset_tags",
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("tag", sa.Text(), nullable=False),
        sa.Column("tagged_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tag"], ["tags.name"], name=op.f("fk_dataset_tags_tag_tags")),
        sa.PrimaryKeyConstraint("dataset_id", "tag", name=op.f("pk_dataset_tags")),
    )
    op.create_index(op.f("ix_dataset_tags_tag"), "dataset_tags", ["tag"])
    op.create_table(
        "field_tags",
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("tag", sa.Text(), nullable=False),
        sa.Column("tagged_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tag"], ["tags.name"], name=op.f("fk_field_tags_tag_tags")),
        sa.PrimaryKeyConstraint("dataset_id", "field", "tag", name=op.f("pk_field_tags")),
    )
    op.create_index(op.f("ix_field_tags_tag"), "field_tags", ["tag"])


def downgrade() -> None:
    for table in ("field_tags", "dataset_tags", "tags", "deletions"):
        op.drop_table(table)
