"""Reads of the derived flow graph (`flows`, DESIGN §6): what walks follow.

The flows were derived when their events were written (`upstream.store.flow_writer`), so a
read only selects rows: no relation is joined to another and nothing is inferred here. The
window is tested on each flow's copy of its run's span.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.flow_rules import Flow, flow_order
from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.dialect import id_filters

Direction = Literal["upstream", "downstream"]

_F = t.flows.c
_COLUMNS = (_F.source_dataset_id, _F.target_dataset_id, _F.job_id, _F.run_id, _F.inferred)


def flow_in_window(window: Window | None) -> sa.ColumnElement[bool]:
    """Declared flows (no run) are always in; a run's flow when its run overlaps `window`
    (started before the end, not finished before the start: DESIGN §4.1)."""
    if window is None:
        return sa.true()
    return sa.or_(
        _F.run_id.is_(None),
        sa.and_(
            _F.started_at < window.end,
            sa.or_(_F.ended_at.is_(None), _F.ended_at >= window.start),
        ),
    )


def flows(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Direction,
    window: Window | None = None,
) -> list[Flow]:
    """Every flow into (`upstream`) or out of (`downstream`) any of `datasets`, sorted."""
    anchor = _F.target_dataset_id if direction == "upstream" else _F.source_dataset_id
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        query = sa.select(*_COLUMNS).where(matches, flow_in_window(window))
        found.update(map(Flow._make, conn.execute(query).all()))
    return sorted(found, key=flow_order)


def all_flows(conn: Connection) -> list[Flow]:
    """Every flow of the store, sorted (the whole graph's export)."""
    found = set(map(Flow._make, conn.execute(sa.select(*_COLUMNS)).all()))
    return sorted(found, key=flow_order)
