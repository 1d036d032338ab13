"""Namespaces and sources in Marquez's shapes.

OpenLineage has no owners, so every namespace is owned by `anonymous`, Marquez's default.
Sources are not reported by OpenLineage either: a dataset's source is its `dataSource` facet
(name and uri), else its namespace, and a source is listed once per name with the earliest and
latest times of its datasets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound
from upstream.model.identity import namespace_id
from upstream.query.marquez.answers import (
    NamespaceAnswer,
    NamespacesAnswer,
    SourceAnswer,
    SourcesAnswer,
)
from upstream.query.marquez.common import Page, iso, require_namespace, total
from upstream.store import schema as t
from upstream.store.deletion import deleted, visible
from upstream.store.visibility import shown_namespaces

OWNER = "anonymous"


def _namespace_doc(row: Any) -> NamespaceAnswer:
    return {
        "name": row.name,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
        "ownerName": OWNER,
        "description": row.description,
        "isHidden": row.deleted,
    }


def list_namespaces(
    conn: Connection,
    page: Page,
    *,
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> NamespacesAnswer:
    """`GET /namespaces`, by name; deleted ones only when asked for; only those the reader
    may see."""
    query = sa.select(t.namespaces, deleted(t.namespaces)).where(
        visible(t.namespaces, include_deleted),
        shown_namespaces(t.namespaces.c.name, visibility),
    )
    rows = conn.execute(page.apply(query.order_by(t.namespaces.c.name))).all()
    return {"namespaces": [_namespace_doc(r) for r in rows], "totalCount": total(conn, query)}


def get_namespace(conn: Connection, name: str, *, include_deleted: bool = False) -> NamespaceAnswer:
    """`GET /namespaces/{ns}`."""
    require_namespace(conn, name, include_deleted=include_deleted)
    query = sa.select(t.namespaces, deleted(t.namespaces))
    row = conn.execute(query.where(t.namespaces.c.id == namespace_id(name))).one()
    return _namespace_doc(row)


@dataclass
class _Source:
    name: str
    url: str
    created: datetime
    updated: datetime

    def doc(self) -> SourceAnswer:
        scheme = self.url.split("://", 1)[0] if "://" in self.url else ""
        return {
            "type": scheme.upper() or "DEFAULT",
            "name": self.name,
            "createdAt": iso(self.created),
            "updatedAt": iso(self.updated),
            "connectionUrl": self.url,
            "description": None,
        }


def _sources(conn: Connection, visibility: Visibility) -> dict[str, _Source]:
    """The sources the datasets of the namespaces `visibility` shows name: a source only
    hidden datasets name is not known to the reader."""
    d = t.datasets
    found: dict[str, _Source] = {}
    query = sa.select(
        d.c.namespace, d.c.source_name, d.c.facets, d.c.created_at, d.c.updated_at
    ).where(shown_namespaces(d.c.namespace, visibility))
    for row in conn.execute(query):
        facet = (row.facets or {}).get("dataSource")
        uri = facet.get("uri") if isinstance(facet, dict) else None
        name = row.source_name or row.namespace
        url = uri if isinstance(uri, str) and uri else row.namespace
        source = found.get(name)
        if source is None:
            found[name] = _Source(name, url, row.created_at, row.updated_at)
        else:
            source.created = min(source.created, row.created_at)
            source.updated = max(source.updated, row.updated_at)
    return found


def list_sources(
    conn: Connection, page: Page, visibility: Visibility = EVERYTHING
) -> SourcesAnswer:
    """`GET /sources`, by name."""
    sources = [s.doc() for _, s in sorted(_sources(conn, visibility).items())]
    return {"sources": sources[page.offset : page.offset + page.limit], "totalCount": len(sources)}


def get_source(conn: Connection, name: str, visibility: Visibility = EVERYTHING) -> SourceAnswer:
    """`GET /sources/{source}`; NotFound for one only hidden datasets name, as for none."""
    source = _sources(conn, visibility).get(name)
    if source is None:
        raise NotFound(f"source {name!r} not found")
    return source.doc()
