"""PostgreSQL's binary `COPY … FROM STDIN` for the write path's bulk inserts.

A batch of events inserts thousands of flow and set-edge rows. COPY streams them to the
server in its binary row format: no statement to parse, no arrays to build and take apart
again (`unnest`), and each value sent in the form the column's type receives. JSON documents
are written by Upstream's own `dumps` (as the other paths store them) and parsed by
PostgreSQL's `jsonb` input.

COPY cannot skip rows already stored, so an insert that must (`ON CONFLICT DO NOTHING`)
copies into a temporary staging table with the insert's columns and moves the rows over in one
`INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING`. `python -m benchmarks bulk` measures both
against `unnest` table by table; `store.dialect` uses them where they were faster.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from upstream.model.json_text import dumps

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]


def copy_rows(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert `rows` (all with the same keys, none stored yet) into `table` by binary COPY."""
    if rows:
        _copy(conn, table.name, [table.c[name] for name in rows[0]], rows)


def copy_rows_ignoring(
    conn: Connection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: str,
    conflict: Sequence[str],
) -> set[Any]:
    """Insert `rows` unless their `conflict` columns are taken, by COPY into a staging table
    (made once per connection and set of columns, emptied at each commit and after each use);
    the new keys. The staging table has the columns alone: no defaults (a serial column's
    would draw numbers from the target's sequence), no constraints."""
    if not rows:
        return set()
    quote = conn.dialect.identifier_preparer.quote
    columns = [table.c[name] for name in rows[0]]
    names = ", ".join(quote(c.name) for c in columns)
    stage = f"stage_{table.name}_{zlib.crc32(names.encode()):08x}"
    conn.exec_driver_sql(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {quote(stage)} ON COMMIT DELETE ROWS AS "
        f"SELECT {names} FROM {quote(table.name)} WITH NO DATA"
    )
    _copy(conn, stage, columns, rows)
    on = ", ".join(quote(column) for column in conflict)
    result = conn.exec_driver_sql(
        f"INSERT INTO {quote(table.name)} ({names}) SELECT {names} FROM {quote(stage)} "
        f"ON CONFLICT ({on}) DO NOTHING RETURNING {quote(key)}"
    )
    inserted = set(result.scalars().all())
    conn.exec_driver_sql(f"TRUNCATE {quote(stage)}")
    return inserted


def _copy(
    conn: Connection,
    target: str,
    columns: Sequence[sa.Column[Any]],
    rows: Sequence[Mapping[str, Any]],
) -> None:
    quote = conn.dialect.identifier_preparer.quote
    names = [c.name for c in columns]
    statement = (
        f"COPY {quote(target)} ({', '.join(quote(n) for n in names)}) FROM STDIN (FORMAT BINARY)"
    )
    # Imported here, where a PostgreSQL store is in use: a command on SQLite need not pay
    # for the driver's import (a tenth of a second of `upstream lineage --db`'s start).
    import psycopg
    from psycopg.types.json import set_json_dumps

    raw: Any = conn.connection.dbapi_connection  # a psycopg connection
    with raw.cursor() as cursor:
        set_json_dumps(dumps, context=cursor)
        try:
            with cursor.copy(statement) as copy:
                copy.set_types([_copy_type(c) for c in columns])
                for row in rows:
                    copy.write_row([row[n] for n in names])
        except psycopg.Error as error:
            # As SQLAlchemy raises for its own statements, so that callers tell a refused
            # row (IntegrityError) from an outage (OperationalError) the same way.
            lost = conn.dialect.is_disconnect(cast(Any, error), raw, cursor)
            if lost:
                conn.invalidate()
            raise sa.exc.DBAPIError.instance(
                statement, None, error, psycopg.Error,
                connection_invalidated=lost, dialect=conn.dialect,
            ) from error  # fmt: skip


def _copy_type(column: sa.Column[Any]) -> str:
    """The PostgreSQL type name binary COPY sends `column`'s values as: its own type, but
    text for a bounded VARCHAR (the server's input takes the same bytes)."""
    name = column.type.compile(dialect=_DIALECT).lower()
    return "text" if name.startswith("varchar") else name
