"""subscription versions: which stored radius a dispatcher has already parsed

Every time the dispatcher stores a subscription's radius it raises the subscription's
`version`, so a dispatcher keeps the radii it parsed in memory and reads again only those
whose version moved (another process stored them) instead of parsing every radius each
round (design §4.8).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "subscriptions",
        sa.Column("version", sa.Integer(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("subscriptions", "version")
