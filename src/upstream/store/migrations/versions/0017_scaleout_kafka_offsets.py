"""kafka offsets: what the consumers stored, per topic and partition

A consumer raises the offset after the last message of its batch in the transaction that
stores the batch, so a read naming a publishing front's Kafka offsets can wait until they are
stored (design §6). Bookkeeping only: a rebuild keeps it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kafka_offsets",
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("partition", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("next_offset", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("topic", "partition", name=op.f("pk_kafka_offsets")),
    )


def downgrade() -> None:
    op.drop_table("kafka_offsets")
