"""What every Marquez endpoint shares: pages, timestamps, not-found, node-id resolution."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound, shown
from upstream.model.identity import DatasetRef, JobRef, namespace_id
from upstream.model.nodeid import NodeId, parse_node_id, possible_namespaces
from upstream.store import schema as t
from upstream.store.aliases import canonical_ref, canonical_refs
from upstream.store.deletion import is_deleted, visible
from upstream.store.dialect import id_filters

Json = dict[str, Any]

#: The facets a document left without its facets still shows something of: its owners, its
#: tags and a job's source location (`upstream.model.ownership`, `jobs._location`).
SHOWN_FACETS = ("ownership", "tags", "sourceCodeLocation")


@dataclass(frozen=True)
class Page:
    """Marquez pagination: `limit` rows from `offset`."""

    limit: int = 100
    offset: int = 0

    def apply(self, query: sa.Select[Any]) -> sa.Select[Any]:
        return query.limit(self.limit).offset(self.offset)


def entity_columns(table: sa.Table, *, facets: bool) -> list[sa.ColumnElement[Any]]:
    """The columns of a dataset's or job's row a document is made from: with its `facets`,
    or without them only their members `SHOWN_FACETS` (a lineage graph's node), so that the
    rest (a `schema`, a job's `sql`: most of the row) is neither read nor parsed."""
    columns: list[sa.ColumnElement[Any]] = [c for c in table.c if c.name != "facets"]
    if facets:
        return [*columns, table.c.facets]
    return [*columns, *(table.c.facets[name].label(f"facet_{name}") for name in SHOWN_FACETS)]


def facets_in(row: Any, *, facets: bool) -> Json:
    """The facets of a row read with `entity_columns`: all of them, or those of
    `SHOWN_FACETS` it has."""
    if facets:
        whole: Json = row["facets"] or {}
        return whole
    members = ((name, row[f"facet_{name}"]) for name in SHOWN_FACETS)
    return {name: value for name, value in members if value is not None}


def iso(moment: datetime | None) -> str | None:
    """ISO-8601 in UTC with a `Z`, as Marquez writes instants."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def total(conn: Connection, query: sa.Select[Any]) -> int:
    """How many rows `query` selects, for `totalCount`."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(query.subquery())).scalar_one())


def resolve_node(conn: Connection, value: str, visibility: Visibility = EVERYTHING) -> NodeId:
    """The reading of node id `value` that names a stored dataset or job (design §4.4).

    Raises InvalidParameter when `value` is malformed and NotFound when no reading matches.
    A reading in a namespace `visibility` does not show, or an alias of a dataset in one,
    matches nothing: the answer is that of a node that does not exist."""
    candidates = possible_namespaces(value)
    by_id = {namespace_id(name): name for name in candidates}
    known: list[str] = []
    for matches in id_filters(conn, t.namespaces.c.id, by_id):
        query = sa.select(t.namespaces.c.id).where(matches)
        known.extend(by_id[i] for i in conn.execute(query).scalars())
    readings = parse_node_id(value, candidates)
    # An alias may be in a namespace no event named: it reads as the dataset it names.
    canonical = canonical_refs(conn, {_entity_id(r) for r in readings if r.kind != "job"})
    readings = [r for r in readings if r.namespace in known or _entity_id(r) in canonical]
    hidden = {k for k, ref in canonical.items() if not visibility.shows(ref.namespace)}
    canonical = {k: ref for k, ref in canonical.items() if k not in hidden}
    readings = [
        r for r in readings if visibility.shows(r.namespace) and _entity_id(r) not in hidden
    ]
    if readings:
        datasets = {DatasetRef(r.namespace, r.name).id for r in readings if r.kind != "job"}
        datasets |= {ref.id for ref in canonical.values()}
        jobs = {JobRef(r.namespace, r.name).id for r in readings if r.kind == "job"}
        stored: set[uuid.UUID] = set()
        for table, ids in ((t.datasets, datasets), (t.jobs, jobs)):
            for matches in id_filters(conn, table.c.id, ids):
                query = sa.select(table.c.id).where(matches, visible(table))
                stored.update(conn.execute(query).scalars())
        for reading in readings:
            ref = canonical.get(_entity_id(reading)) if reading.kind != "job" else None
            chosen = replace(reading, namespace=ref.namespace, name=ref.name) if ref else reading
            if _entity_id(chosen) in stored:
                return chosen
    raise NotFound(f"nodeId: no dataset or job matches {shown(value)}")


def _entity_id(node: NodeId) -> uuid.UUID:
    if node.kind == "job":
        return JobRef(node.namespace, node.name).id
    return DatasetRef(node.namespace, node.name).id


def require_namespace(conn: Connection, namespace: str, *, include_deleted: bool = False) -> None:
    """NotFound unless the namespace is stored (and not deleted, unless asked for)."""
    missing = f"namespace {namespace!r} not found"
    gone = f"namespace {namespace!r} was deleted"
    _require(conn, t.namespaces, namespace_id(namespace), (missing, gone), include_deleted)


def require_dataset(
    conn: Connection,
    namespace: str,
    name: str,
    *,
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> uuid.UUID:
    """The id of a stored dataset (the one it is an alias of, for an alias); NotFound names
    the namespace or the dataset missing. An alias of a dataset `visibility` does not show
    is missing, in the very words of a missing one (the route has checked the namespace
    asked for; the alias must not reach into another)."""
    ref = canonical_ref(conn, DatasetRef(namespace, name))
    missing = f"dataset {name!r} not found in namespace {namespace!r}"
    if not visibility.shows(ref.namespace):
        require_namespace(conn, namespace, include_deleted=include_deleted)
        raise NotFound(missing)
    require_namespace(conn, ref.namespace, include_deleted=include_deleted)
    dataset_id = ref.id
    gone = f"dataset {name!r} in namespace {namespace!r} was deleted"
    _require(conn, t.datasets, dataset_id, (missing, gone), include_deleted)
    return dataset_id


def require_job(
    conn: Connection, namespace: str, name: str, *, include_deleted: bool = False
) -> uuid.UUID:
    """The id of a stored job; NotFound names the namespace or the job missing."""
    require_namespace(conn, namespace, include_deleted=include_deleted)
    job_id = JobRef(namespace, name).id
    missing = f"job {name!r} not found in namespace {namespace!r}"
    gone = f"job {name!r} in namespace {namespace!r} was deleted"
    _require(conn, t.jobs, job_id, (missing, gone), include_deleted)
    return job_id


def _require(
    conn: Connection,
    table: sa.Table,
    entity: uuid.UUID,
    messages: tuple[str, str],
    include_deleted: bool,
) -> None:
    """NotFound saying the entity is missing, or deleted (`messages`). The message names no
    parameter: the command line, which has none to show deleted entities, says it too."""
    missing, gone = messages
    if conn.execute(sa.select(table.c.id).where(table.c.id == entity)).first() is None:
        raise NotFound(missing)
    if not include_deleted and is_deleted(conn, entity):
        raise NotFound(gone)
