"""The dataset or job a lineage question starts from, or `NotFound` saying what is missing.

One lookup for every lineage service, so an unknown namespace, an unknown name and a deleted
entity read the same in every answer. Marquez's endpoints have their own
(`query.marquez.common`): they also show deleted entities on request and word it their way.
"""

from __future__ import annotations

import functools
import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound
from upstream.model.identity import DatasetRef, JobRef, namespace_id
from upstream.store import schema as t
from upstream.store.aliases import canonical_ref
from upstream.store.change_log import HEAD, seen_in_snapshot
from upstream.store.deletion import entity_deleted
from upstream.store.engine import is_snapshot


def existing_dataset(
    conn: Connection, namespace: str, name: str, visibility: Visibility = EVERYTHING
) -> DatasetRef:
    """The stored dataset (the one it is an alias of, for an alias). One `visibility` does
    not show is missing, in the very words of a missing one (no existence oracle)."""
    _require_visible(namespace, visibility)
    ref = DatasetRef(namespace, name)
    known, stored, deleted, alias = _found(conn, namespace, t.datasets, ref.id, aliases=True)
    if alias:  # the statement again for the dataset it stands for (seldom asked)
        ref = canonical_ref(conn, ref)
        known, stored, deleted, _ = _found(conn, ref.namespace, t.datasets, ref.id)
    if not known:
        raise NotFound(f"namespace {namespace!r} not found")
    if not stored or not visibility.shows(ref.namespace):
        raise NotFound(f"dataset {name!r} not found in namespace {namespace!r}")
    if deleted:
        raise NotFound(f"dataset {name!r} in namespace {namespace!r} was deleted")
    return ref


def existing_job(
    conn: Connection, namespace: str, name: str, visibility: Visibility = EVERYTHING
) -> uuid.UUID:
    """The id of a stored job; one `visibility` does not show is missing."""
    _require_visible(namespace, visibility)
    job_id = JobRef(namespace, name).id
    known, stored, deleted, _ = _found(conn, namespace, t.jobs, job_id)
    if not known:
        raise NotFound(f"namespace {namespace!r} not found")
    if not stored:
        raise NotFound(f"job {name!r} not found in namespace {namespace!r}")
    if deleted:
        raise NotFound(f"job {name!r} in namespace {namespace!r} was deleted")
    return job_id


def existing_namespace(conn: Connection, namespace: str) -> None:
    """NotFound unless `namespace` is stored."""
    n = t.namespaces.c
    if conn.execute(sa.select(n.name).where(n.name == namespace)).first() is None:
        raise NotFound(f"namespace {namespace!r} not found")


def _require_visible(namespace: str, visibility: Visibility) -> None:
    """NotFound, as for a namespace never stored, for one the reader may not see."""
    if not visibility.shows(namespace):
        raise NotFound(f"namespace {namespace!r} not found")


#: The entity and the namespace `_found` asks about, bound when it runs.
_ENTITY = sa.bindparam("entity", type_=t.datasets.c.id.type)
_NAMESPACE = sa.bindparam("namespace", type_=t.namespaces.c.id.type)


@functools.cache
def _lookup(table: sa.Table, aliases: bool) -> sa.Select[bool, bool, bool, bool, int]:
    """The statement `_found` runs, made once: building it again for every read cost more
    than running it. It reads the change log's position too, which the walk that follows
    asks for (`graph_index.index.graph_of`): one statement, one round trip, for both."""
    a = t.dataset_aliases.c
    alias = sa.exists().where(a.id == _ENTITY, a.canonical_id != a.id) if aliases else sa.false()
    return sa.select(
        sa.exists().where(t.namespaces.c.id == _NAMESPACE),
        sa.exists().where(table.c.id == _ENTITY),
        entity_deleted(_ENTITY),
        alias,
        HEAD,
    )


def _found(
    conn: Connection, namespace: str, table: sa.Table, entity: uuid.UUID, *, aliases: bool = False
) -> tuple[bool, bool, bool, bool]:
    """Whether namespace `namespace` is stored, whether the entity `entity` is a row of
    `table`, whether it is deleted and (asked with `aliases`) whether it is an alias of
    another dataset (`store.aliases`) — in one statement: each of a lineage answer's few
    statements is a round trip."""
    values = {"entity": entity, "namespace": namespace_id(namespace)}
    known, present, deleted, alias, at = conn.execute(_lookup(table, aliases), values).one()
    if is_snapshot(conn):
        seen_in_snapshot(conn, at)
    return bool(known), bool(present), bool(deleted), bool(alias)
