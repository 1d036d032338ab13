"""tags on jobs

Marquez's web UI tags jobs as it tags datasets. People tag, not events, so the table is no
derived table: a rebuild keeps it, as it keeps the tags of datasets and fields.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_tags",
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("tag", sa.Text(), nullable=False),
        sa.Column("tagged_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tag"], ["tags.name"], name=op.f("fk_job_tags_tag_tags")),
        sa.PrimaryKeyConstraint("job_id", "tag", name=op.f("pk_job_tags")),
    )
    op.create_index(op.f("ix_job_tags_tag"), "job_tags", ["tag"])


def downgrade() -> None:
    op.drop_table("job_tags")
