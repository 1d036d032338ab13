"""`GET /api/v1/events/lineage` and `GET /api/v1/events`: the OpenLineage events as received,
verbatim. A reader limited to some namespaces is listed, and counted, only the events it may
read whole (`store.visibility.shown_events`): an event is never rewritten, so one naming
anything hidden is left out."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.query.marquez.answers import EventsAnswer, LineageEventsAnswer
from upstream.query.marquez.common import Page, total
from upstream.store import schema as t
from upstream.store.dialect import lists_a_namespace
from upstream.store.payloads import unpack
from upstream.store.visibility import shown_events

SortDirection = Literal["asc", "desc"]


def lineage_events(
    conn: Connection,
    *,
    before: datetime | None,
    after: datetime | None,
    direction: SortDirection,
    page: Page,
    visibility: Visibility = EVERYTHING,
) -> LineageEventsAnswer:
    """Events `visibility` shows with `after <= eventTime < before`, by event time (then
    arrival), as Marquez; `totalCount` counts those shown."""
    e = t.events
    query = sa.select(e.c.payload_zstd).where(shown_events(conn, visibility))
    if before is not None:
        query = query.where(e.c.event_time < before)
    if after is not None:
        query = query.where(e.c.event_time >= after)
    order = [e.c.event_time, e.c.seq]
    ordered = query.order_by(*(c.desc() if direction == "desc" else c.asc() for c in order))
    payloads = unpack(conn, conn.execute(page.apply(ordered)).scalars().all())
    return {"events": [json.loads(p) for p in payloads], "totalCount": total(conn, query)}


def recent_events(
    conn: Connection,
    page: Page,
    *,
    namespace: str | None = None,
    visibility: Visibility = EVERYTHING,
) -> EventsAnswer:
    """Events `visibility` shows, newest first, as Marquez's `GET /api/v1/events` lists them
    (`{"events"}`, no count); with `namespace`, only those whose job, or any input or
    output, is in it (an unknown namespace has none)."""
    e = t.events
    query = sa.select(e.c.payload_zstd).where(shown_events(conn, visibility))
    if namespace is not None:
        query = query.where(
            sa.or_(
                e.c.job_namespace == namespace,
                e.c.dataset_namespace == namespace,
                lists_a_namespace(conn, e.c.io_namespaces, lambda listed: listed == namespace),
            )
        )
    ordered = query.order_by(e.c.event_time.desc(), e.c.seq.desc())
    payloads = unpack(conn, conn.execute(page.apply(ordered)).scalars().all())
    return {"events": [json.loads(p) for p in payloads]}
