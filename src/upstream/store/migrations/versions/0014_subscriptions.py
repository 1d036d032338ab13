"""subscriptions: teams told when their lineage changes

The subscriptions people make, the dispatcher's position in the change log, the
notifications it records (the exact body and its delivery state) and every delivery
attempt. None of them is derived: a rebuild keeps them.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("spec", _JSON, nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("radius", _JSON, nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
    )
    op.create_table(
        "watch_cursor",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("swept_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watch_cursor")),
    )
    op.create_table(
        "notifications",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("subscription_id", sa.Uuid(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("next_attempt_at", _TIME, nullable=False),
        sa.Column("leased_until", _TIME, nullable=True),
        sa.Column("delivered_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["subscriptions.id"],
            name=op.f("fk_notifications_subscription_id_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    op.create_index(op.f("ix_notifications_subscription_id"), "notifications", ["subscription_id"])
    op.create_index(op.f("ix_notifications_next_attempt_at"), "notifications", ["next_attempt_at"])
    op.create_table(
        "delivery_attempts",
        sa.Column("notification_id", sa.Uuid(), nullable=False),
        sa.Column("attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", _TIME, nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["notification_id"],
            ["notifications.id"],
            name=op.f("fk_delivery_attempts_notification_id_notifications"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("notification_id", "attempt", name=op.f("pk_delivery_attempts")),
    )


def downgrade() -> None:
    op.drop_table("delivery_attempts")
    op.drop_table("notifications")
    op.drop_table("watch_cursor")
    op.drop_table("subscriptions")
