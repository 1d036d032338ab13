"""`GET /api/v1/search`: datasets and jobs whose name contains the query; and the same
search in the shape of Marquez's `/api/v2beta/search/jobs|datasets`, which Marquez answers
from OpenSearch (hits with their latest run, and the matched text marked in `highlights`).

Matching is a case-insensitive substring match in which `%` and `_` are ordinary characters
(dataset names such as `sales_2024%` are common); Marquez treats them as SQL wildcards.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.identity import DatasetRef, JobRef, namespace_id
from upstream.model.nodeid import dataset_node_id, job_node_id
from upstream.query.marquez.answers import OpenSearchAnswer, SearchAnswer, SearchResult
from upstream.query.marquez.common import Json, iso, total
from upstream.query.marquez.jobs import ranked_runs
from upstream.store import schema as t
from upstream.store.deletion import deleted, visible
from upstream.store.packed_facets import unpack
from upstream.store.visibility import shown_namespaces

SearchType = Literal["DATASET", "JOB"]
SearchSort = Literal["NAME", "UPDATED_AT"]


def search(
    conn: Connection,
    q: str,
    *,
    only: SearchType | None = None,
    sort: SearchSort = "NAME",
    limit: int = 10,
    namespace: str | None = None,
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> SearchAnswer:
    """Up to `limit` datasets and jobs matching `q`, by name (A-Z) or newest update first;
    deleted ones only when asked for (then flagged `deleted`); of the namespaces `visibility`
    shows only, and counted among those only (a hidden name is not even a number)."""
    results: list[SearchResult] = []
    count = 0
    for kind, table in (("DATASET", t.datasets), ("JOB", t.jobs)):
        if only is not None and only != kind:
            continue
        query = _matching(table, q, namespace).where(
            visible(table, include_deleted), shown_namespaces(table.c.namespace, visibility)
        )
        count += total(conn, query)
        ordered = query.order_by(*_order(table, sort)).limit(limit)
        for row in conn.execute(ordered):
            render = dataset_node_id if kind == "DATASET" else job_node_id
            results.append(
                cast(
                    SearchResult,
                    {
                        "type": kind,
                        "name": row.name,
                        "updatedAt": iso(row.updated_at),
                        "namespace": row.namespace,
                        "nodeId": render(row.namespace, row.name),
                        **({"deleted": True} if row.deleted else {}),
                    },
                )
            )
    results.sort(key=lambda r: (r["name"], r["namespace"], r["type"]))
    if sort == "UPDATED_AT":
        results.sort(key=lambda r: r["updatedAt"] or "", reverse=True)
    return {"totalCount": count, "results": results[:limit]}


def _matching(table: sa.Table, q: str, namespace: str | None) -> sa.Select[Any]:
    columns = (table.c.name, table.c.namespace, table.c.updated_at, deleted(table))
    query = sa.select(*columns).where(
        sa.func.lower(table.c.name).contains(q.lower(), autoescape=True)
    )
    if namespace is not None:
        query = query.where(table.c.namespace_id == namespace_id(namespace))
    return query


def _order(table: sa.Table, sort: SearchSort) -> list[Any]:
    by_name = [table.c.name, table.c.namespace]
    return by_name if sort == "NAME" else [table.c.updated_at.desc(), *by_name]


#: How many hits a `/api/v2beta/search` answer holds (OpenSearch's default page, which
#: Marquez does not change).
HITS = 10


def search_jobs_hits(
    conn: Connection, q: str, visibility: Visibility = EVERYTHING
) -> OpenSearchAnswer:
    """`GET /api/v2beta/search/jobs`: the jobs of namespaces `visibility` shows whose name
    contains `q`, by name, each with its latest run (`run_id`, `eventType`: the type of the
    run's latest event, `runFacets`)."""
    names = _hit_names(conn, t.jobs, q, visibility)
    ids = [JobRef(*name).id for name in names]
    r = t.runs
    ranked = ranked_runs().where(r.c.job_id.in_(ids)).subquery()
    latest = (
        sa.select(ranked.c.job_id, r.c.id, r.c.state, r.c.facets)
        .join(r, r.c.id == ranked.c.id)
        .where(ranked.c.position == 1)
    )
    rows = conn.execute(latest).all()
    runs = {row.job_id: row for row in rows}
    facets = unpack(conn, [row.facets for row in rows])
    run_facets = {row.job_id: found for row, found in zip(rows, facets, strict=True)}

    def hit(job: Any) -> Json:
        run = runs.get(job.id)
        streaming = (job.processing_type or "").upper() == "STREAMING"
        return {
            "run_id": str(run.id) if run else None,
            "name": job.name,
            "namespace": job.namespace,
            "eventType": run.state if run else None,
            "type": "STREAM" if streaming else "BATCH",
            "facets": job.facets or {},
            "runFacets": run_facets[job.id] if run else {},
        }

    return _answer(conn, t.jobs, ids, names, q, hit, t.jobs.c.processing_type)


def search_datasets_hits(
    conn: Connection, q: str, visibility: Visibility = EVERYTHING
) -> OpenSearchAnswer:
    """`GET /api/v2beta/search/datasets`: the datasets of namespaces `visibility` shows whose
    name contains `q`, by name, each with the latest run of a job it shows that read or
    wrote it (`run_id`, `eventType`)."""
    names = _hit_names(conn, t.datasets, q, visibility)
    ids = [DatasetRef(*name).id for name in names]
    rel, r = t.relations, t.runs
    position = sa.func.row_number().over(
        partition_by=rel.c.dataset_id, order_by=(rel.c.event_time.desc(), rel.c.run_id.desc())
    )
    among = sa.select(rel.c.dataset_id, rel.c.run_id, position.label("position")).where(
        rel.c.dataset_id.in_(ids), rel.c.run_id.is_not(None)
    )
    if not visibility.everything:
        among = among.join(t.jobs, t.jobs.c.id == rel.c.job_id).where(
            shown_namespaces(t.jobs.c.namespace, visibility)
        )
    ranked = among.subquery()
    latest = (
        sa.select(ranked.c.dataset_id, ranked.c.run_id, r.c.state)
        .join(r, r.c.id == ranked.c.run_id)
        .where(ranked.c.position == 1)
    )
    runs = {row.dataset_id: row for row in conn.execute(latest)}

    def hit(dataset: Any) -> Json:
        run = runs.get(dataset.id)
        return {
            "run_id": str(run.run_id) if run else None,
            "name": dataset.name,
            "namespace": dataset.namespace,
            "eventType": run.state if run else None,
            "facets": dataset.facets or {},
        }

    return _answer(conn, t.datasets, ids, names, q, hit)


def _answer(
    conn: Connection,
    table: sa.Table,
    ids: list[uuid.UUID],
    names: list[tuple[str, str]],
    q: str,
    hit: Callable[[Any], Json],
    *columns: Any,
) -> OpenSearchAnswer:
    """The hits for `names` (with ids `ids`) in their order, each rendered by `hit` from its
    row of `table` (id, namespace, name, facets and `columns`), with their highlights."""
    c = table.c
    query = sa.select(c.id, c.namespace, c.name, c.facets, *columns).where(c.id.in_(ids))
    rows = {(row.namespace, row.name): row for row in conn.execute(query)}
    return {
        "hits": [hit(rows[name]) for name in names],
        "highlights": [_highlight(name, q) for _, name in names],
    }


def _hit_names(
    conn: Connection, table: sa.Table, q: str, visibility: Visibility
) -> list[tuple[str, str]]:
    """(namespace, name) of the first `HITS` entities of `table` matching `q`, not deleted
    and of namespaces `visibility` shows."""
    query = _matching(table, q, None).where(
        visible(table), shown_namespaces(table.c.namespace, visibility)
    )
    ordered = query.order_by(*_order(table, "NAME")).limit(HITS)
    return [(row.namespace, row.name) for row in conn.execute(ordered)]


def _highlight(name: str, q: str) -> dict[str, list[str]]:
    """Where `q` occurs in `name` (any case), marked `<em>…</em>` as OpenSearch marks it."""
    marked = re.sub(re.escape(q), lambda m: f"<em>{m.group(0)}</em>", name, flags=re.IGNORECASE)
    return {"name": [marked]}
