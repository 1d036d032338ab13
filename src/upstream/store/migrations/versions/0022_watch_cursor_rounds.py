"""watch cursor rounds: each stored dispatcher round claims the cursor once

A dispatcher stores a round only if the cursor is still as it read it. The position alone
does not say so: a sweep with no write since the last round leaves it where it was, so two
processes sweeping at once both found it unmoved and both stored the same notifications.
`rounds` is raised by every stored round, and a round stores only if it is unchanged
(design §4.8).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "watch_cursor",
        sa.Column("rounds", sa.BigInteger(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("watch_cursor", "rounds")
