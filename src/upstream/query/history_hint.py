"""What to say when a window hides all of a dataset's lineage (design §4.2): the time of its
latest run outside the window, so that an empty answer tells the reader where to look.

A dataset *has history* when a run of any job that reads or writes it (a job not deleted)
had started by the question's `asOf` time; the hint names the start of the latest such run,
latest by start. It is given only when no such run overlaps the window: then the window is
what hides the lineage, not the direction or the levels asked for.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.visibility import shown_namespaces
from upstream.store.window import run_overlaps, run_started_by


def latest_run_outside(
    conn: Connection, dataset: uuid.UUID, window: Window, visibility: Visibility = EVERYTHING
) -> datetime | None:
    """The start of the latest run touching `dataset` that had started by the window's
    `as_of` time, when none of them overlaps the window; None otherwise. Only the runs of
    jobs `visibility` shows count: a hidden job's run times are none of the reader's
    business (design §5)."""
    runs = t.runs
    touching = (
        sa.select(runs.c.started_at, run_overlaps(runs, window).label("inside"))
        .select_from(t.relations)
        .join(runs, runs.c.id == t.relations.c.run_id)
        .join(t.jobs, t.jobs.c.id == t.relations.c.job_id)
        .where(
            t.relations.c.dataset_id == dataset,
            runs.c.started_at.is_not(None),
            run_started_by(runs, window.as_of),
            visible(t.jobs),
            shown_namespaces(t.jobs.c.namespace, visibility),
        )
        .subquery()
    )
    latest, inside = conn.execute(
        sa.select(
            sa.func.max(touching.c.started_at),
            sa.func.count().filter(touching.c.inside),
        )
    ).one()
    return latest if latest is not None and not inside else None
