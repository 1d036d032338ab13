"""soft deletion of namespaces, datasets and jobs; tags on datasets and fields

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None

_DELETABLE = ("namespaces", "datasets", "jobs")


def upgrade() -> None:
    only_deleted = sa.text("deleted_at IS NOT NULL")
    for table in _DELETABLE:
        op.add_column(table, sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
        op.create_index(
            f"ix_{table}_deleted",
            table,
            ["id"],
            postgresql_where=only_deleted,
            sqlite_where=only_deleted,
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
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_dataset_tags_dataset_id_datasets")
        ),
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
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_field_tags_dataset_id_datasets")
        ),
        sa.ForeignKeyConstraint(["tag"], ["tags.name"], name=op.f("fk_field_tags_tag_tags")),
        sa.PrimaryKeyConstraint("dataset_id", "field", "tag", name=op.f("pk_field_tags")),
    )
    op.create_index(op.f("ix_field_tags_tag"), "field_tags", ["tag"])


def downgrade() -> None:
    op.drop_table("field_tags")
    op.drop_table("dataset_tags")
    op.drop_table("tags")
    for table in _DELETABLE:
        op.drop_index(f"ix_{table}_deleted", table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("deleted_at")
