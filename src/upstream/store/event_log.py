"""The kept raw events, read in the order they were stored: what a rebuild replays."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.payloads import StoredEvent, stored_events


def count_events(
    conn: Connection, *, seq_at_most: int | None = None, seq_after: int | None = None
) -> int:
    """How many events are stored, within the given positions."""
    query = sa.select(sa.func.count()).select_from(t.events)
    if seq_at_most is not None:
        query = query.where(t.events.c.seq <= seq_at_most)
    if seq_after is not None:
        query = query.where(t.events.c.seq > seq_after)
    return int(conn.execute(query).scalar_one())


def events_after(conn: Connection, position: int, limit: int) -> list[StoredEvent]:
    """At most `limit` events stored after `position`, in order."""
    e = t.events.c
    query = (
        sa.select(e.seq, e.payload_zstd, e.received_at)
        .where(e.seq > position)
        .order_by(e.seq)
        .limit(limit)
    )
    return stored_events(conn, conn.execute(query).all())
