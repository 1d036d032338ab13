"""datasets and jobs keep a hash of their content

Nearly every event names datasets and jobs that are stored already, with the same facets. The
writer read each of them back (facets of several kilobytes, parsed from JSON) only to find
nothing to change: a fifth of the writer's time on the medium workload. A row now keeps the
hash of what an event may change in it, and a row named again with the same hash is not read.

Rows written before have no hash: the writer reads and merges them as before, and writes the
hash then, so no rebuild is needed.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_TABLES = ("datasets", "jobs")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("content_digest", sa.Text))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN on both stores (SQLite has it since 3.35): a batch copy of the
    # table would drop it, which the rows referring to it forbid.
    for table in _TABLES:
        op.drop_column(table, "content_digest")
