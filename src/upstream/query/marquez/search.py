"""`GET /api/v1/search`: datasets and jobs whose name contains the query.

Matching is a case-insensitive substring match in which `%` and `_` are ordinary characters
(dataset names such as `sales_2024%` are common); Marquez treats them as SQL wildcards.
"""

from __future__ import annotations

from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import namespace_id
from upstream.model.nodeid import dataset_node_id, job_node_id
from upstream.query.marquez.answers import SearchAnswer, SearchResult
from upstream.query.marquez.common import iso, total
from upstream.store import schema as t
from upstream.store.deletion import deleted, visible

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
) -> SearchAnswer:
    """Up to `limit` datasets and jobs matching `q`, by name (A-Z) or newest update first;
    deleted ones only when asked for (then flagged `deleted`)."""
    results: list[SearchResult] = []
    count = 0
    for kind, table in (("DATASET", t.datasets), ("JOB", t.jobs)):
        if only is not None and only != kind:
            continue
        query = _matching(table, q, namespace).where(visible(table, include_deleted))
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
