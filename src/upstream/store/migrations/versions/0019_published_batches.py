"""published batches: whether a publishing front's batch was committed or abandoned

Tansu (and any broker without read_committed isolation) delivers every message a producer
sent, so a front that published part of a batch cannot take it back. The decision on each
batch is made once, here: the front commits it after Kafka acknowledged every event, or a
consumer abandons it once its deadline passed; consumers store a batch's events only once it
is committed (design §6). Bookkeeping only: a rebuild keeps it.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "published_batches",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("committed", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_published_batches")),
    )


def downgrade() -> None:
    op.drop_table("published_batches")
