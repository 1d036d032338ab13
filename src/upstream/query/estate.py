"""What the estate holds, for a home page (design §5): namespaces with their counts, the
datasets written most recently, and each job's latest run with the failed ones first.

Each answer is one query, paged with `limit`/`offset` like Marquez's lists.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.query.answers import (
    LatestRun,
    LatestRunsAnswer,
    NamespaceCountsAnswer,
    WrittenDatasetsAnswer,
)
from upstream.query.marquez.common import Page, iso, total
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.visibility import shown_namespaces

#: The states of a run that did not do its work (OpenLineage's event types).
FAILED_STATES = ("FAIL", "ABORT")


def _count_in_namespace(table: sa.Table) -> sa.ScalarSelect[Any]:
    return (
        sa.select(sa.func.count())
        .where(table.c.namespace_id == t.namespaces.c.id, visible(table))
        .scalar_subquery()
    )


def namespace_counts(
    conn: Connection, page: Page, visibility: Visibility = EVERYTHING
) -> NamespaceCountsAnswer:
    """Namespaces by name, each with its (not deleted) datasets and jobs counted; only
    those the reader may see."""
    ns = t.namespaces
    query = sa.select(
        ns.c.name,
        ns.c.updated_at,
        _count_in_namespace(t.datasets).label("datasets"),
        _count_in_namespace(t.jobs).label("jobs"),
    ).where(visible(ns), shown_namespaces(ns.c.name, visibility))
    rows = conn.execute(page.apply(query.order_by(ns.c.name))).all()
    return {
        "namespaces": [
            {"name": r.name, "datasets": r.datasets, "jobs": r.jobs, "updatedAt": iso(r.updated_at)}
            for r in rows
        ],
        "totalCount": total(conn, query),
    }


def recently_written(
    conn: Connection, page: Page, visibility: Visibility = EVERYTHING
) -> WrittenDatasetsAnswer:
    """Datasets by the event time of the last write recorded for them, newest first; a
    dataset only ever read is not listed, nor one the reader may not see."""
    r, d = t.relations, t.datasets
    written = (
        sa.select(r.c.dataset_id, sa.func.max(r.c.event_time).label("written_at"))
        .where(r.c.access == "write")
        .group_by(r.c.dataset_id)
        .subquery()
    )
    query = (
        sa.select(d.c.namespace, d.c.name, written.c.written_at)
        .join(written, written.c.dataset_id == d.c.id)
        .where(visible(d), shown_namespaces(d.c.namespace, visibility))
    )
    ordered = query.order_by(written.c.written_at.desc(), d.c.namespace, d.c.name)
    rows = conn.execute(page.apply(ordered)).all()
    return {
        "datasets": [
            {"namespace": row.namespace, "name": row.name, "writtenAt": iso(row.written_at)}
            for row in rows
        ],
        "totalCount": total(conn, query),
    }


def latest_runs(
    conn: Connection, page: Page, visibility: Visibility = EVERYTHING
) -> LatestRunsAnswer:
    """Each job's latest run (by start, else end, else its last event), those that
    failed or were aborted first, then newest first, of the jobs the reader may see. Runs
    known only as a parent are left out: nothing about them was reported."""
    runs, jobs = t.runs, t.jobs
    began = sa.func.coalesce(runs.c.started_at, runs.c.ended_at, runs.c.state_time)
    ranked = (
        sa.select(
            runs.c.id,
            runs.c.job_id,
            runs.c.state,
            runs.c.started_at,
            runs.c.ended_at,
            began.label("began"),
            sa.func.row_number()
            .over(partition_by=runs.c.job_id, order_by=(began.desc(), runs.c.id.desc()))
            .label("rank"),
        )
        .where(runs.c.has_events)
        .subquery()
    )
    failed = ranked.c.state.in_(FAILED_STATES)
    query = (
        sa.select(ranked, jobs.c.namespace, jobs.c.name)
        .join(jobs, jobs.c.id == ranked.c.job_id)
        .where(ranked.c.rank == 1, visible(jobs), shown_namespaces(jobs.c.namespace, visibility))
    )
    ordered = query.order_by(
        sa.case((failed, 0), else_=1), ranked.c.began.desc(), jobs.c.namespace, jobs.c.name
    )
    rows = conn.execute(page.apply(ordered)).all()
    return {
        "runs": [_latest(row) for row in rows],
        "totalCount": total(conn, query),
        "failedCount": total(conn, query.where(failed)),
    }


def _latest(row: Any) -> LatestRun:
    return {
        "id": str(row.id),
        "job": {"namespace": row.namespace, "name": row.name},
        "state": row.state,
        "startedAt": iso(row.started_at),
        "endedAt": iso(row.ended_at),
    }
