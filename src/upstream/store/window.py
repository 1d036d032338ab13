"""The run-overlaps-window condition, in SQL (DESIGN §4.1)."""

from __future__ import annotations

import sqlalchemy as sa

from upstream.model.window import Window
from upstream.store import schema as t


def run_in_window(
    run_id: sa.ColumnElement[object], window: Window | None
) -> sa.ColumnElement[bool]:
    """True for declared lineage (no run) and for runs that overlap `window`."""
    if window is None:
        return sa.true()
    overlapping = sa.select(t.runs.c.id).where(
        t.runs.c.started_at < window.end,
        sa.or_(t.runs.c.ended_at.is_(None), t.runs.c.ended_at >= window.start),
    )
    return sa.or_(run_id.is_(None), run_id.in_(overlapping))
