"""compressed payloads: the events' inputs' and outputs' namespaces kept beside them

Marquez's events of a namespace were found by walking every stored payload's inputs and
outputs in SQL. Each event now keeps those namespaces (`model.named_namespaces`), worked
out when it is accepted, and here for the events already stored.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04
"""

from __future__ import annotations

import orjson
import sqlalchemy as sa
from alembic import op

from upstream.model.named_namespaces import io_namespaces_text

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

#: Events read, worked out and written back at a time.
CHUNK = 2000


def upgrade() -> None:
    op.add_column("events", sa.Column("io_namespaces", sa.Text(), nullable=True))
    conn = op.get_bind()
    events = sa.table(
        "events",
        sa.column("seq", sa.BigInteger()),
        sa.column("payload"),
        sa.column("io_namespaces"),
    )
    update = (
        events.update()
        .where(events.c.seq == sa.bindparam("at"))
        .values(io_namespaces=sa.bindparam("names"))
    )
    after = -1
    while True:
        chunk = conn.execute(
            sa.select(events.c.seq, events.c.payload)
            .where(events.c.seq > after)
            .order_by(events.c.seq)
            .limit(CHUNK)
        ).all()
        if not chunk:
            break
        named = [
            {"at": seq, "names": io_namespaces_text(orjson.loads(text))} for seq, text in chunk
        ]
        conn.execute(update, named)
        after = chunk[-1][0]


def downgrade() -> None:
    op.drop_column("events", "io_namespaces")
