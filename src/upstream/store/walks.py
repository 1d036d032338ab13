"""Reads of the stored flows (`flows`, design §6): every walk runs on the in-memory graph
index; these reads are what the tests and the exactness benchmark check stored rows with.

The flows were derived when their events were written (`upstream.store.flow_writer`), so a
read only selects rows: no relation is joined to another and nothing is inferred here. The
window is tested on each flow's copy of its run's span.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Step
from upstream.model.flow_rules import Flow, flow_order
from upstream.model.window import Window
from upstream.store.deletion import not_deleted
from upstream.store.dialect import id_filters
from upstream.store.window import (
    Bounds,
    flows_as_of,
)


def flow_in_window(flow: Any, window: Bounds | None) -> sa.ColumnElement[bool]:
    """Declared flows (no run) are always in; a run's flow when its run overlaps `window`
    (started before the end, not finished before the start: design §4.1) and had started by
    its `as_of` time (design §4.5). `flow` is the columns of `flows_as_of`."""
    if window is None:
        return sa.true()
    return sa.or_(
        flow.run_id.is_(None),
        sa.and_(
            flow.started_at < window.end,
            sa.or_(flow.ended_at.is_(None), flow.ended_at >= window.start),
            sa.true() if window.as_of is None else flow.started_at <= window.as_of,
        ),
    )


def flows(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Step,
    window: Window | None = None,
) -> list[Flow]:
    """Every flow into (`upstream`) or out of (`downstream`) any of `datasets`, sorted."""
    return sorted(flow_set(conn, datasets, direction, window), key=flow_order)


def flow_set(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Step,
    window: Window | None = None,
) -> set[Flow]:
    """`flows` unsorted, for a walk, which orders nothing by them (sorting a medium walk's
    44,000 flows cost a tenth of its time)."""
    f = flows_as_of(window).c
    anchor = f.target_dataset_id if direction == "upstream" else f.source_dataset_id
    columns = (f.source_dataset_id, f.target_dataset_id, f.job_id, f.run_id, f.inferred)
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        query = sa.select(*columns).where(
            matches,
            flow_in_window(f, window),
            not_deleted(f.source_dataset_id, f.target_dataset_id, f.job_id),
        )
        found.update(map(Flow._make, conn.execute(query).all()))
    return found
