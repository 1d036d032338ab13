"""The kept raw events, read in the order they were stored: what a rebuild replays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t


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


def events_after(conn: Connection, position: int, limit: int) -> Sequence[Any]:
    """At most `limit` events stored after `position`, in order: rows of (seq, payload,
    received_at)."""
    e = t.events.c
    query = (
        sa.select(e.seq, e.payload, e.received_at)
        .where(e.seq > position)
        .order_by(e.seq)
        .limit(limit)
    )
    return conn.execute(query).all()
