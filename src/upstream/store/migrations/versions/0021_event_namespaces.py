"""event namespaces: the namespaces each stored event names, kept beside its payload

A scoped reader sees an event only when every namespace it names, at any depth, is one it
may read (design §5). Walking every stored payload for that made a scoped page of events
cost a second on the small workload; the list is now worked out once, when the event is
accepted (`model.named_namespaces`), and here for the events already stored.

Revision ID: 0021
Revises: 0019
Create Date: 2026-12-04
"""

from __future__ import annotations

import orjson
import sqlalchemy as sa
from alembic import op

from upstream.model.named_namespaces import namespaces_text

revision = "0021"
down_revision = "0019"
branch_labels = None
depends_on = None

#: Events read, worked out and written back at a time.
CHUNK = 2000


def upgrade() -> None:
    op.add_column("events", sa.Column("namespaces", sa.Text(), nullable=True))
    conn = op.get_bind()
    events = sa.table(
        "events", sa.column("seq", sa.BigInteger()), sa.column("payload"), sa.column("namespaces")
    )
    update = (
        events.update()
        .where(events.c.seq == sa.bindparam("at"))
        .values(namespaces=sa.bindparam("names"))
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
        named = [{"at": seq, "names": namespaces_text(orjson.loads(text))} for seq, text in chunk]
        conn.execute(update, named)
        after = chunk[-1][0]


def downgrade() -> None:
    op.drop_column("events", "namespaces")
