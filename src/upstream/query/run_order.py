"""The order lineage answers list runs in: newest start first (design §4.2)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import id_filters


def newest_first(
    conn: Connection, run_ids: Collection[uuid.UUID]
) -> Callable[[str], tuple[bool, float, str]]:
    """A sort key for run ids: newest start first, runs without a start time last, ties by
    id, so the order is the same on every call and on both databases."""
    started: dict[str, float] = {}
    r = t.runs.c
    for matches in id_filters(conn, r.id, run_ids):
        for run_id, at in conn.execute(sa.select(r.id, r.started_at).where(matches)).all():
            if at is not None:
                started[str(run_id)] = at.timestamp()

    def key(run_id: str) -> tuple[bool, float, str]:
        moment = started.get(run_id)
        return (moment is None, -(moment or 0.0), run_id)

    return key
