"""Soft deletion of namespaces, datasets and jobs (design §4.5), and the rule of what is shown.

A deletion is a row of `deletions` naming the entity's id; the entity keeps its rows and its
history. People delete, events do not, so deletions are not derived data: `upstream db
rebuild` keeps them, and only an event *received after* the deletion that names the entity
ends it (Marquez revives hidden datasets and jobs the same way). Comparing with the time the
event was received, not with the time of the write, makes a rebuild, which replays events with
their original receipt times, end exactly the deletions that live writes ended.
Whether a row is shown is decided here only, by `visible`.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.aliases import not_alias
from upstream.store.change_log import ENTITIES, record
from upstream.store.dialect import ByIds, id_filters, insert_ignoring_conflicts

Kind = Literal["namespace", "dataset", "job"]
_D = t.deletions.c


def deleted(table: sa.Table) -> sa.ColumnElement[bool]:
    """Whether the row of `table` (namespaces, datasets or jobs) is deleted, as a column."""
    return sa.exists().where(_D.entity_id == table.c.id).label("deleted")


def visible(table: sa.Table, include_deleted: bool = False) -> sa.ColumnElement[bool]:
    """The condition under which a row of `table` appears in an answer. A dataset that is
    an alias of another never does: it is shown as that one (`upstream.store.aliases`)."""
    shown = sa.true() if include_deleted else ~sa.exists().where(_D.entity_id == table.c.id)
    return sa.and_(shown, not_alias(table.c.id)) if table is t.datasets else shown


def entity_deleted(entity: uuid.UUID | sa.BindParameter[uuid.UUID]) -> sa.ColumnElement[bool]:
    """Whether the entity `entity` is deleted, as a column of a statement that checks more."""
    return sa.exists().where(_D.entity_id == entity)


def is_deleted(conn: Connection, entity: uuid.UUID) -> bool:
    return bool(conn.execute(sa.select(entity_deleted(entity))).scalar())


def mark_deleted(conn: Connection, kind: Kind, ids: Collection[uuid.UUID], now: datetime) -> None:
    """Delete the entities `ids` at `now` (those deleted already keep their time)."""
    already: set[uuid.UUID] = set()
    for matches in id_filters(conn, _D.entity_id, ids):
        already.update(conn.execute(sa.select(_D.entity_id).where(matches)).scalars())
    new = [i for i in ids if i not in already]
    if new:
        rows = [{"entity_id": i, "kind": kind, "deleted_at": now} for i in new]
        conn.execute(insert_ignoring_conflicts(conn, t.deletions, "entity_id"), rows)
        record(conn, ENTITIES, new)


def delete_namespace_contents(conn: Connection, namespace: uuid.UUID, now: datetime) -> None:
    """Delete a namespace with every dataset and job in it, as Marquez does."""
    contents: tuple[tuple[sa.Table, Kind], ...] = ((t.datasets, "dataset"), (t.jobs, "job"))
    for table, kind in contents:
        ids = conn.execute(sa.select(table.c.id).where(table.c.namespace_id == namespace))
        mark_deleted(conn, kind, list(ids.scalars()), now)
    mark_deleted(conn, "namespace", [namespace], now)


def revive(conn: Connection, named: Collection[uuid.UUID], received_at: datetime) -> None:
    """End the deletion of every entity in `named` deleted before `received_at`: the entities
    that events received then name. Deletions are few, so each statement reads a small table."""
    for ended in _REVIVE.run(conn, named, received_at=received_at):
        record(conn, ENTITIES, ended.scalars())


_REVIVE = ByIds(
    _D.entity_id,
    lambda ids: (
        sa.delete(t.deletions)
        .where(ids, _D.deleted_at < sa.bindparam("received_at", type_=_D.deleted_at.type))
        .returning(_D.entity_id)
    ),
)


def not_deleted(*ids: sa.ColumnElement[uuid.UUID] | sa.Column[uuid.UUID]) -> sa.ColumnElement[bool]:
    """None of the entities `ids` names (a NULL names none) is deleted: the condition every
    read that walks or lists lineage puts on its rows, so no answer passes through a deleted
    dataset or job."""
    return sa.and_(*(~sa.exists().where(_D.entity_id == column) for column in ids))
