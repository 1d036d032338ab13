"""Changes people make through the Marquez API: deleting entities, tagging datasets and jobs.

Every change answers with the changed entity's document, read in the same transaction, as
Marquez does. Deletion is soft (`upstream.store.deletion`): the entity leaves lists, search
and lineage answers until an event names it again. Tagging a dataset, a field or a job with a
tag that does not exist yet creates the tag, as Marquez does; taking off a tag the entity
lacks changes nothing and still answers the entity; `PUT /tags/{tag}` creates or
describes one. Tag names are kept as given: Marquez upper-cases the names of field tags only,
which makes `pii` on a dataset and on a field two tags; Upstream keeps one name for both.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import InvalidInput, NotFound, Problem
from upstream.model.identity import namespace_id
from upstream.query.marquez.answers import NamespaceAnswer
from upstream.query.marquez.common import (
    Json,
    require_dataset,
    require_job,
    require_namespace,
)
from upstream.query.marquez.datasets import dataset_docs
from upstream.query.marquez.jobs import job_docs
from upstream.query.marquez.namespaces import get_namespace
from upstream.store import schema as t
from upstream.store.change_log import TAGS, record
from upstream.store.deletion import delete_namespace_contents, mark_deleted
from upstream.store.dialect import insert_ignoring_conflicts


def delete_dataset(conn: Connection, namespace: str, name: str, now: datetime) -> Json:
    """`DELETE /namespaces/{ns}/datasets/{ds}`: mark the dataset deleted."""
    dataset_id = require_dataset(conn, namespace, name)
    mark_deleted(conn, "dataset", [dataset_id], now)
    return dataset_docs(conn, [dataset_id])[dataset_id]


def delete_job(conn: Connection, namespace: str, name: str, now: datetime) -> Json:
    """`DELETE /namespaces/{ns}/jobs/{job}`: mark the job deleted."""
    job_id = require_job(conn, namespace, name)
    mark_deleted(conn, "job", [job_id], now)
    return job_docs(conn, [job_id])[job_id]


def delete_namespace(conn: Connection, namespace: str, now: datetime) -> NamespaceAnswer:
    """`DELETE /namespaces/{ns}`: mark the namespace deleted, with its datasets and jobs."""
    require_namespace(conn, namespace)
    delete_namespace_contents(conn, namespace_id(namespace), now)
    return get_namespace(conn, namespace, include_deleted=True)


def checked_tag(name: str) -> str:
    """A tag name as given; a blank one is refused naming the `tag` parameter."""
    if not name.strip():
        raise InvalidInput([Problem("tag", "must not be blank")])
    return name


def put_tag(conn: Connection, name: str, description: str | None, now: datetime) -> Json:
    """`PUT /tags/{tag}`: create the tag, or set its description (Marquez's upsert)."""
    name = checked_tag(name)
    exists = conn.execute(sa.select(t.tags.c.name).where(t.tags.c.name == name)).first()
    if exists:
        conn.execute(
            sa.update(t.tags)
            .where(t.tags.c.name == name)
            .values(description=description, updated_at=now)
        )
    else:
        conn.execute(
            sa.insert(t.tags).values(
                name=name, description=description, created_at=now, updated_at=now
            )
        )
    return {"name": name, "description": description}


def _ensure_tag(conn: Connection, name: str, now: datetime) -> None:
    row = {"name": name, "description": None, "created_at": now, "updated_at": now}
    conn.execute(insert_ignoring_conflicts(conn, t.tags, "name"), [row])


def tag_dataset(conn: Connection, namespace: str, dataset: str, tag: str, now: datetime) -> Json:
    """`POST …/datasets/{ds}/tags/{tag}`: put `tag` on a dataset."""
    tag = checked_tag(tag)
    dataset_id = require_dataset(conn, namespace, dataset)
    _ensure_tag(conn, tag, now)
    row = {"dataset_id": dataset_id, "tag": tag, "tagged_at": now}
    statement = insert_ignoring_conflicts(conn, t.dataset_tags, "dataset_id", "tag")
    _tags_changed(conn, statement.returning(t.dataset_tags.c.dataset_id), row)
    return dataset_docs(conn, [dataset_id])[dataset_id]


def untag_dataset(conn: Connection, namespace: str, dataset: str, tag: str, now: datetime) -> Json:
    """`DELETE …/datasets/{ds}/tags/{tag}`: take `tag` off (a tag it lacks changes nothing)."""
    dataset_id = require_dataset(conn, namespace, dataset)
    d = t.dataset_tags
    removed = sa.delete(d).where(d.c.dataset_id == dataset_id, d.c.tag == tag)
    _tags_changed(conn, removed.returning(d.c.dataset_id))
    return dataset_docs(conn, [dataset_id])[dataset_id]


def tag_job(conn: Connection, namespace: str, job: str, tag: str, now: datetime) -> Json:
    """`POST …/jobs/{job}/tags/{tag}`: put `tag` on a job."""
    tag = checked_tag(tag)
    job_id = require_job(conn, namespace, job)
    _ensure_tag(conn, tag, now)
    row = {"job_id": job_id, "tag": tag, "tagged_at": now}
    conn.execute(insert_ignoring_conflicts(conn, t.job_tags, "job_id", "tag"), [row])
    return job_docs(conn, [job_id])[job_id]


def untag_job(conn: Connection, namespace: str, job: str, tag: str, now: datetime) -> Json:
    """`DELETE …/jobs/{job}/tags/{tag}`: take `tag` off a job."""
    job_id = require_job(conn, namespace, job)
    j = t.job_tags
    conn.execute(sa.delete(j).where(j.c.job_id == job_id, j.c.tag == tag))
    return job_docs(conn, [job_id])[job_id]


def tag_field(
    conn: Connection, namespace: str, dataset: str, field_name: str, tag: str, now: datetime
) -> Json:
    """`POST …/fields/{field}/tags/{tag}`: put `tag` on a field the dataset lists."""
    tag = checked_tag(tag)
    dataset_id = _require_field(conn, namespace, dataset, field_name)
    _ensure_tag(conn, tag, now)
    row = {"dataset_id": dataset_id, "field": field_name, "tag": tag, "tagged_at": now}
    statement = insert_ignoring_conflicts(conn, t.field_tags, "dataset_id", "field", "tag")
    _tags_changed(conn, statement.returning(t.field_tags.c.dataset_id), row)
    return dataset_docs(conn, [dataset_id])[dataset_id]


def untag_field(
    conn: Connection, namespace: str, dataset: str, field_name: str, tag: str, now: datetime
) -> Json:
    """`DELETE …/fields/{field}/tags/{tag}`: take `tag` off one field of a dataset."""
    dataset_id = _require_field(conn, namespace, dataset, field_name)
    f = t.field_tags
    removed = sa.delete(f).where(
        f.c.dataset_id == dataset_id, f.c.field == field_name, f.c.tag == tag
    )
    _tags_changed(conn, removed.returning(f.c.dataset_id))
    return dataset_docs(conn, [dataset_id])[dataset_id]


def _tags_changed(conn: Connection, statement: Any, row: Json | None = None) -> None:
    """Run `statement`, which returns the dataset of each tag it puts or takes off; the
    change log hears of the datasets whose tags changed (none when it changed nothing)."""
    record(conn, TAGS, conn.execute(statement, row).scalars())


def _require_field(conn: Connection, namespace: str, dataset: str, field_name: str) -> UUID:
    dataset_id = require_dataset(conn, namespace, dataset)
    fields = conn.execute(
        sa.select(t.datasets.c.fields).where(t.datasets.c.id == dataset_id)
    ).scalar_one()
    if not any(f.get("name") == field_name for f in fields or []):
        raise NotFound(
            f"field {field_name!r} not found in dataset {dataset!r} of namespace {namespace!r}"
        )
    return dataset_id
