"""Statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

T = TypeVar("T")

#: Bound parameters per IN list; SQLite allows 32,766 per statement.
CHUNK = 2000


def insert_ignoring_conflicts(conn: Connection, table: sa.Table, *index_columns: str) -> Any:
    """INSERT … ON CONFLICT (index_columns) DO NOTHING for the connection's dialect."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    return insert(table).on_conflict_do_nothing(index_elements=list(index_columns) or None)


def chunks(items: Sequence[T] | Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """Split a long IN list into pieces the database accepts."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def for_update(conn: Connection, query: sa.Select[Any]) -> sa.Select[Any]:
    """Lock the selected rows until commit on PostgreSQL; SQLite's write lock already
    serialises writers."""
    return query.with_for_update() if conn.dialect.name == "postgresql" else query
