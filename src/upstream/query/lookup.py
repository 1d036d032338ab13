"""The dataset or job a lineage question starts from, or `NotFound` saying what is missing.

One lookup for every lineage service, so an unknown namespace, an unknown name and a deleted
entity read the same in every answer. Marquez's endpoints have their own
(`query.marquez.common`): they also show deleted entities on request and word it their way.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import NotFound
from upstream.model.identity import DatasetRef, JobRef, namespace_id
from upstream.store import schema as t
from upstream.store.aliases import canonical_ref
from upstream.store.deletion import is_deleted


def existing_dataset(conn: Connection, namespace: str, name: str) -> DatasetRef:
    """The stored dataset (the one it is an alias of, for an alias)."""
    ref = canonical_ref(conn, DatasetRef(namespace, name))
    _require_namespace(conn, ref.namespace, namespace)
    exists = sa.select(t.datasets.c.id).where(t.datasets.c.id == ref.id)
    if conn.execute(exists).first() is None:
        raise NotFound(f"dataset {name!r} not found in namespace {namespace!r}")
    if is_deleted(conn, ref.id):
        raise NotFound(f"dataset {name!r} in namespace {namespace!r} was deleted")
    return ref


def existing_job(conn: Connection, namespace: str, name: str) -> uuid.UUID:
    """The id of a stored job."""
    _require_namespace(conn, namespace, namespace)
    job_id = JobRef(namespace, name).id
    if conn.execute(sa.select(t.jobs.c.id).where(t.jobs.c.id == job_id)).first() is None:
        raise NotFound(f"job {name!r} not found in namespace {namespace!r}")
    if is_deleted(conn, job_id):
        raise NotFound(f"job {name!r} in namespace {namespace!r} was deleted")
    return job_id


def _require_namespace(conn: Connection, stored: str, asked: str) -> None:
    """NotFound naming `asked` unless namespace `stored` (where `asked` resolved) is known."""
    known = sa.select(t.namespaces.c.id).where(t.namespaces.c.id == namespace_id(stored))
    if conn.execute(known).first() is None:
        raise NotFound(f"namespace {asked!r} not found")
