"""Soft deletion of namespaces, datasets and jobs (DESIGN §4.5), and the rule of what is shown.

A deleted entity keeps its rows and its history: deletion sets `deleted_at`, and the next
stored event that names the entity clears it again (Marquez revives hidden datasets and jobs
the same way). Whether a row is shown is decided here only, by `shown`.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import id_filters

DELETABLE = (t.namespaces, t.datasets, t.jobs)


def shown(table: sa.Table, include_deleted: bool = False) -> sa.ColumnElement[bool]:
    """The condition under which a row of `table` appears in an answer."""
    return sa.true() if include_deleted else table.c.deleted_at.is_(None)


def is_deleted(row: Any) -> bool:
    """Whether a selected row (with its `deleted_at`) is a deleted entity."""
    return row.deleted_at is not None


def mark_deleted(
    conn: Connection, table: sa.Table, ids: Collection[uuid.UUID], now: datetime
) -> None:
    """Mark the rows of `table` with `ids` deleted at `now`; deleted rows keep their time."""
    for matches in id_filters(conn, table.c.id, ids):
        conn.execute(
            sa.update(table).where(matches, table.c.deleted_at.is_(None)).values(deleted_at=now)
        )


def delete_namespace_contents(conn: Connection, namespace: uuid.UUID, now: datetime) -> None:
    """Mark a namespace deleted with every dataset and job in it, as Marquez does."""
    for table in (t.datasets, t.jobs):
        conn.execute(
            sa.update(table)
            .where(table.c.namespace_id == namespace, table.c.deleted_at.is_(None))
            .values(deleted_at=now)
        )
    mark_deleted(conn, t.namespaces, [namespace], now)


def revive(
    conn: Connection,
    namespaces: Collection[uuid.UUID],
    datasets: Collection[uuid.UUID],
    jobs: Collection[uuid.UUID],
) -> None:
    """Clear the deletion of every entity a newly stored event names.

    The condition on `deleted_at` comes first so that each statement reads the small partial
    index of deleted rows, not one primary-key probe per id: a store with nothing deleted pays
    three empty index scans per batch."""
    for table, ids in ((t.namespaces, namespaces), (t.datasets, datasets), (t.jobs, jobs)):
        for matches in id_filters(conn, table.c.id, ids):
            conn.execute(
                sa.update(table)
                .where(table.c.deleted_at.is_not(None), matches)
                .values(deleted_at=None)
            )
