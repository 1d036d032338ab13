"""`GET /api/v1/events/lineage`: the OpenLineage events as received, verbatim."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.query.marquez.common import Json, Page, total
from upstream.store import schema as t

SortDirection = Literal["asc", "desc"]


def lineage_events(
    conn: Connection,
    *,
    before: datetime | None,
    after: datetime | None,
    direction: SortDirection,
    page: Page,
) -> Json:
    """Events with `after <= eventTime < before`, by event time (then arrival), as Marquez."""
    e = t.events
    query = sa.select(e.c.payload)
    if before is not None:
        query = query.where(e.c.event_time < _utc(before))
    if after is not None:
        query = query.where(e.c.event_time >= _utc(after))
    order = [e.c.event_time, e.c.seq]
    ordered = query.order_by(*(c.desc() if direction == "desc" else c.asc() for c in order))
    payloads = conn.execute(page.apply(ordered)).scalars()
    return {"events": [json.loads(p) for p in payloads], "totalCount": total(conn, query)}


def _utc(moment: datetime) -> datetime:
    """Stored times are UTC; a time without an offset is read as UTC."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
