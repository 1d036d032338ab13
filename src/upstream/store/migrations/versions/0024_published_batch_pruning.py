"""published batch pruning: each batch's deadline and the Kafka offsets its events got

`published_batches` only grew. A committed batch's row may go once the consumers stored past
every offset its messages got (`kafka_offsets`); an abandoned one once no front can commit it
any more, as a front refuses to commit past the deadline. So the row records both. Rows made
before this revision have neither and are kept (design §6).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("published_batches") as table:
        table.add_column(sa.Column("deadline", sa.Double(), nullable=True))
        table.add_column(
            sa.Column(
                "offsets",
                sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("published_batches") as table:
        table.drop_column("offsets")
        table.drop_column("deadline")
