"""the change log: what each committed write changed, in commit order

Each process that keeps a view of the store (the in-memory graph index, notifications, reads
from a replica) follows this log to stay exact: a position, and the changes after it
(`upstream.store.change_log`). `change_log_head` holds the newest position given, one row
whose lock makes positions commit in order.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "change_log",
        sa.Column("position", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ids", _JSON, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_change_log"),
    )
    head = op.create_table(
        "change_log_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_change_log_head"),
    )
    op.bulk_insert(head, [{"id": 1, "position": 0}])


def downgrade() -> None:
    op.drop_table("change_log_head")
    op.drop_table("change_log")
