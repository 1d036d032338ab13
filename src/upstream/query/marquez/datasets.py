"""Datasets and dataset versions in Marquez's shapes.

A version is a dataset as one run wrote it (Marquez versions datasets the same way). A dataset's
`currentVersion` is its newest version, `lastModifiedAt` the end of the latest completed run
that wrote it, and `sourceName` the `dataSource` facet's name, else the namespace (OpenLineage
names a dataset's data source by its namespace).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound
from upstream.model.identity import namespace_id
from upstream.model.ownership import owners_of
from upstream.query.marquez.answers import (
    DatasetAnswer,
    DatasetsAnswer,
    DatasetVersionAnswer,
    DatasetVersionsAnswer,
)
from upstream.query.marquez.columns import dataset_column_lineage
from upstream.query.marquez.common import (
    Json,
    Page,
    entity_columns,
    facets_in,
    iso,
    require_dataset,
    require_namespace,
    total,
)
from upstream.query.marquez.runs import run_docs
from upstream.query.marquez.tags import DatasetTags, tags_of, with_facet_tags
from upstream.store import schema as t
from upstream.store.deletion import deleted, visible
from upstream.store.dialect import id_filters
from upstream.store.packed_facets import unpacked_rows


def render_fields(
    fields: list[Json] | None, tags: Mapping[str, list[str]] | None = None
) -> list[Json]:
    """Schema fields as Marquez lists them (`tags` always present); nested fields are kept.

    `tags` are the field tags by top-level field name (a tag names a field as listed)."""
    rendered = []
    for f in fields or []:
        doc: Json = {
            "name": f.get("name"),
            "type": f.get("type"),
            "tags": list((tags or {}).get(f.get("name") or "", [])),
            "description": f.get("description"),
        }
        if f.get("fields"):
            doc["fields"] = render_fields(f["fields"])
        rendered.append(doc)
    return rendered


def dataset_docs(
    conn: Connection,
    dataset_ids: Collection[uuid.UUID],
    *,
    column_lineage: bool = False,
    facets: bool = True,
) -> dict[uuid.UUID, Json]:
    """Marquez `Dataset` documents for `dataset_ids`, built with a fixed number of queries;
    with `columnLineage` when asked for (Marquez's dataset endpoints have it, its lineage
    graph's nodes do not), without `facets` when not (its lineage graph's nodes have none)."""
    rows: list[Any] = []
    read = entity_columns(t.datasets, facets=facets)
    for matches in id_filters(conn, t.datasets.c.id, dataset_ids):
        query = sa.select(*read, deleted(t.datasets)).where(matches)
        rows.extend(conn.execute(query).mappings().all())
    ids = [row["id"] for row in rows]
    versions = _versions(conn, ids)
    tags = tags_of(conn, ids)
    columns = dataset_column_lineage(conn, ids) if column_lineage else {}
    docs: dict[uuid.UUID, Json] = {}
    for row in rows:
        known = versions.get(row["id"], _Versions())
        version = known.current
        stated = facets_in(row, facets=facets)
        tagged = with_facet_tags(tags.get(row["id"], DatasetTags()), stated)
        docs[row["id"]] = {
            "id": {"namespace": row["namespace"], "name": row["name"]},
            "type": "DB_TABLE",
            "name": row["name"],
            "physicalName": row["name"],
            "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"]),
            "namespace": row["namespace"],
            "sourceName": row["source_name"] or row["namespace"],
            "fields": render_fields(row["fields"], tagged.fields),
            "tags": tagged.dataset,
            "owners": owners_of(stated),
            "lastModifiedAt": iso(known.modified),
            "lastLifecycleState": version[1] if version else None,
            "description": row["description"],
            **({"facets": stated} if facets else {}),
            "currentVersion": str(version[0]) if version else None,
            **({"columnLineage": columns.get(row["id"])} if column_lineage else {}),
            "deleted": row["deleted"],
        }
    return docs


@dataclass
class _Versions:
    """What a dataset's versions say about it: the newest version (id, lifecycle state) and
    when the latest completed run that wrote one ended."""

    current: tuple[uuid.UUID, str | None] | None = None
    current_at: tuple[datetime, uuid.UUID] | None = None
    modified: datetime | None = None


def _versions(conn: Connection, dataset_ids: list[uuid.UUID]) -> dict[uuid.UUID, _Versions]:
    """Each dataset's `_Versions`, from one read of its versions (the newest: created last,
    ties to the greater id) with the end of each one's run if it completed."""
    v, r = t.dataset_versions, t.runs
    found: dict[uuid.UUID, _Versions] = defaultdict(_Versions)
    for matches in id_filters(conn, v.c.dataset_id, dataset_ids):
        query = (
            sa.select(v.c.dataset_id, v.c.id, v.c.lifecycle, v.c.created_at, r.c.ended_at)
            .outerjoin(r, sa.and_(r.c.id == v.c.run_id, r.c.state == "COMPLETE"))
            .where(matches)
        )
        for dataset, version, lifecycle, created, ended in conn.execute(query).all():
            known = found[dataset]
            if known.current_at is None or (created, version) > known.current_at:
                known.current, known.current_at = (version, lifecycle), (created, version)
            if ended is not None and (known.modified is None or ended > known.modified):
                known.modified = ended
    return found


def list_datasets(
    conn: Connection, namespace: str, page: Page, *, include_deleted: bool = False
) -> DatasetsAnswer:
    """`GET /namespaces/{ns}/datasets`, by name; deleted ones only when asked for."""
    require_namespace(conn, namespace, include_deleted=include_deleted)
    query = sa.select(t.datasets.c.id).where(
        t.datasets.c.namespace_id == namespace_id(namespace),
        visible(t.datasets, include_deleted),
    )
    ordered = query.order_by(t.datasets.c.name, t.datasets.c.id)
    ids = list(conn.execute(page.apply(ordered)).scalars())
    docs = dataset_docs(conn, ids, column_lineage=True)
    return {
        "datasets": [cast(DatasetAnswer, docs[i]) for i in ids],
        "totalCount": total(conn, query),
    }


def get_dataset(
    conn: Connection,
    namespace: str,
    name: str,
    *,
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> DatasetAnswer:
    """`GET /namespaces/{ns}/datasets/{ds}`."""
    dataset_id = require_dataset(
        conn, namespace, name, include_deleted=include_deleted, visibility=visibility
    )
    return cast(DatasetAnswer, dataset_docs(conn, [dataset_id], column_lineage=True)[dataset_id])


def list_dataset_versions(
    conn: Connection,
    namespace: str,
    name: str,
    page: Page,
    visibility: Visibility = EVERYTHING,
) -> DatasetVersionsAnswer:
    """`GET /namespaces/{ns}/datasets/{ds}/versions`, newest first."""
    dataset_id = require_dataset(conn, namespace, name, visibility=visibility)
    v = t.dataset_versions
    query = sa.select(v.c.id).where(v.c.dataset_id == dataset_id)
    ordered = query.order_by(v.c.created_at.desc(), v.c.id.desc())
    ids = list(conn.execute(page.apply(ordered)).scalars())
    docs = _version_docs(conn, dataset_id, ids)
    versions = [cast(DatasetVersionAnswer, docs[i]) for i in ids]
    return {"versions": versions, "totalCount": total(conn, query)}


def get_dataset_version(
    conn: Connection,
    namespace: str,
    name: str,
    version: uuid.UUID,
    visibility: Visibility = EVERYTHING,
) -> DatasetVersionAnswer:
    """`GET /namespaces/{ns}/datasets/{ds}/versions/{version}`."""
    dataset_id = require_dataset(conn, namespace, name, visibility=visibility)
    doc = _version_docs(conn, dataset_id, [version]).get(version)
    if doc is None:
        raise NotFound(
            f"version {version} of dataset {name!r} not found in namespace {namespace!r}"
        )
    return cast(DatasetVersionAnswer, doc)


def _version_docs(
    conn: Connection, dataset_id: uuid.UUID, version_ids: list[uuid.UUID]
) -> dict[uuid.UUID, Json]:
    dataset = (
        conn.execute(sa.select(t.datasets).where(t.datasets.c.id == dataset_id)).mappings().one()
    )
    v, c = t.dataset_versions, t.version_contents
    rows: list[Any] = []
    for matches in id_filters(conn, v.c.id, version_ids):
        query = (
            sa.select(v, c.c.fields, c.c.facets)
            .join(c, c.c.id == v.c.content_id)
            .where(v.c.dataset_id == dataset_id, matches)
        )
        rows.extend(dict(row) for row in conn.execute(query).mappings())
    unpacked_rows(conn, c, rows)
    runs = run_docs(conn, [row["run_id"] for row in rows])
    tagged = with_facet_tags(
        tags_of(conn, [dataset_id]).get(dataset_id, DatasetTags()), dataset["facets"] or {}
    )
    return {
        row["id"]: {
            "id": {
                "namespace": dataset["namespace"],
                "name": dataset["name"],
                "version": str(row["id"]),
            },
            "type": "DB_TABLE",
            "name": dataset["name"],
            "physicalName": dataset["name"],
            "createdAt": iso(row["created_at"]),
            "version": str(row["id"]),
            "namespace": dataset["namespace"],
            "sourceName": dataset["source_name"] or dataset["namespace"],
            "fields": render_fields(row["fields"], tagged.fields),
            "tags": tagged.dataset,
            "lifecycleState": row["lifecycle"],
            "description": dataset["description"],
            "createdByRun": runs.get(row["run_id"]),
            "facets": row["facets"] or {},
        }
        for row in rows
    }
