"""Statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from upstream.model.json_text import dumps

T = TypeVar("T")

#: Bound parameters per IN list; SQLite allows 32,766 per statement.
CHUNK = 2000


def insert_ignoring_conflicts(conn: Connection, table: sa.Table, *index_columns: str) -> Any:
    """INSERT … ON CONFLICT (index_columns) DO NOTHING for the connection's dialect."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    return insert(table).on_conflict_do_nothing(index_elements=list(index_columns) or None)


def insert_rows_ignoring(
    conn: Connection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: str,
    conflict: Sequence[str] = (),
) -> set[Any]:
    """Insert `rows` (all with the same keys) unless `key` is taken; return the new keys.
    `conflict` names the unique constraint's columns when `key` is only part of it (the
    tables kept by month, `upstream.store.months`).

    PostgreSQL gets one array per column and `INSERT … SELECT FROM unnest(…)`: the statement
    text is the same for any number of rows, so it is parsed and planned once per connection,
    where a multi-row VALUES list costs a fresh parse (client and server) per batch size.
    The arrays travel in binary (`%b`): text arrays would escape every JSON payload.
    SQLite gets multi-row `VALUES` lists (`_insert_sqlite_rows`).
    """
    return _insert_rows(conn, table, rows, key, conflict)


def insert_rows(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert `rows` (all with the same keys), none of which can be stored already, as
    `insert_rows_ignoring` does: without SQLAlchemy's per-row statement machinery, which cost
    more than the database's work on a batch's thousands of edge and flow rows."""
    _insert_rows(conn, table, rows, None)


def _insert_rows(
    conn: Connection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: str | None,
    conflict: Sequence[str] = (),
) -> set[Any]:
    if not rows:
        return set()
    if conn.dialect.name != "postgresql":
        return _insert_sqlite_rows(conn, table, rows, key, conflict)
    columns = [table.c[name] for name in rows[0]]
    quote = conn.dialect.identifier_preparer.quote
    names = ", ".join(quote(c.name) for c in columns)
    arrays = ", ".join(f"%(p{i})b::{_array_type(conn, c)}" for i, c in enumerate(columns))
    values = ", ".join(f"{quote(c.name)}::jsonb" if _is_json(c) else quote(c.name) for c in columns)
    sql = (
        f"INSERT INTO {quote(table.name)} ({names}) SELECT {values} FROM unnest({arrays}) "
        f"AS u({names})"
    )
    if key is not None:
        on = _conflict(conn, key, conflict)
        sql += f" ON CONFLICT ({on}) DO NOTHING RETURNING {quote(key)}"
    params = {
        f"p{i}": [_json_or_null(r[c.name]) for r in rows]
        if _is_json(c)
        else [r[c.name] for r in rows]
        for i, c in enumerate(columns)
    }
    result = conn.exec_driver_sql(sql, params)
    return set() if key is None else set(result.scalars().all())


def _conflict(conn: Connection, key: str, conflict: Sequence[str]) -> str:
    quote = conn.dialect.identifier_preparer.quote
    return ", ".join(quote(column) for column in conflict or (key,))


def _json_or_null(value: Any) -> str | None:
    """A document as JSON text; None stays SQL NULL (only nullable columns are given one)."""
    return None if value is None else dumps(value)


#: Rows per SQLite INSERT: 500 rows of the widest table (edges, 19 columns) stay far below
#: SQLite's 32,766 bound parameters per statement.
_SQLITE_ROWS = 500


def _insert_sqlite_rows(
    conn: Connection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: str | None,
    conflict: Sequence[str],
) -> set[Any]:
    """`INSERT … VALUES (…), (…) ON CONFLICT DO NOTHING RETURNING key` (without a `key`, a
    plain INSERT), `_SQLITE_ROWS` rows at
    a time, with each value converted by its column type's own bind processor (as SQLAlchemy
    would store it) but without SQLAlchemy's per-row statement machinery, which cost more
    than SQLite's work. (`executemany` cannot return which rows were new.)"""
    dialect = conn.dialect
    columns = [table.c[name] for name in rows[0]]
    convert = [c.type.dialect_impl(dialect).bind_processor(dialect) for c in columns]
    quote = dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(table.name)} ({', '.join(quote(c.name) for c in columns)}) VALUES "
    tail = ""
    read_key: Callable[[Any], Any] = _as_stored
    if key is not None:
        key_type = table.c[key].type.dialect_impl(dialect)
        read_key = key_type.result_processor(dialect, None) or read_key
        on = _conflict(conn, key, conflict)
        tail = f" ON CONFLICT ({on}) DO NOTHING RETURNING {quote(key)}"
    one_row = "(" + ", ".join("?" * len(columns)) + ")"
    inserted: set[Any] = set()
    for part in chunks(rows, _SQLITE_ROWS):
        # Column by column (one `map` per column), then interleaved row by row.
        values = [
            [row[c.name] for row in part]
            if processor is None
            else list(map(processor, [row[c.name] for row in part]))
            for c, processor in zip(columns, convert, strict=True)
        ]
        params = tuple(value for row in zip(*values, strict=True) for value in row)
        sql = head + ", ".join([one_row] * len(part)) + tail
        result = conn.exec_driver_sql(sql, params)
        if key is not None:
            inserted.update(read_key(value) for value in result.scalars().all())
    return inserted


def _as_stored(value: Any) -> Any:
    return value


def _is_json(column: sa.Column[Any]) -> bool:
    return isinstance(column.type, sa.JSON)


def _array_type(conn: Connection, column: sa.Column[Any]) -> str:
    if _is_json(column):
        return "text[]"
    return f"{column.type.compile(dialect=conn.dialect)}[]"


def id_filters(
    conn: Connection, column: sa.ColumnElement[Any], ids: Iterable[Any]
) -> Iterator[sa.ColumnElement[bool]]:
    """`column` is one of `ids`, as the conditions of as many statements as the database
    needs: one `column = ANY(array)` on PostgreSQL, an `IN` list per `CHUNK` ids on SQLite.

    The array is one parameter, so the statement text is the same for any number of ids:
    PostgreSQL parses it once and psycopg prepares it after a few runs, where each IN list
    was new text to render, convert and plan (tens of milliseconds per lineage walk)."""
    wanted = set(ids)
    if not wanted:
        return
    if conn.dialect.name == "postgresql":
        array = sa.bindparam(None, list(wanted), type_=postgresql.ARRAY(column.type))
        yield column == sa.any_(array)
        return
    for part in chunks(sorted(wanted)):
        yield column.in_(part)


def text_id_filters(
    conn: Connection, column: sa.ColumnElement[Any], ids: Iterable[str]
) -> Iterator[sa.ColumnElement[bool]]:
    """`id_filters` for ids given as their hyphenated text (`id_text`), which the database
    compares without a `uuid.UUID` being made for each: PostgreSQL casts one text array,
    SQLite compares its stored hex digits."""
    wanted = set(ids)
    if not wanted:
        return
    if conn.dialect.name == "postgresql":
        array = sa.bindparam(None, list(wanted), type_=postgresql.ARRAY(sa.Text))
        yield column == sa.any_(sa.cast(array, postgresql.ARRAY(sa.Uuid)))
        return
    stored = sa.type_coerce(column, sa.Text)
    for part in chunks(sorted(text.replace("-", "") for text in wanted)):
        yield stored.in_(part)


def constant(value: str) -> sa.ColumnElement[str]:
    """`value` written into a statement's text rather than sent as a parameter. A statement
    planned once for every value of its parameters (a walk's, `upstream.store.walks`) can
    then use a partial index whose predicate names the value (`source_type = 'job'`): the
    planner cannot prove that predicate for a parameter."""
    return sa.literal(value, sa.Text, literal_execute=True)


class few_rows(FunctionElement[Any]):  # noqa: N801 (used as a function)
    """`few_rows(condition)`: `condition`, which SQLite is to plan as keeping few rows.

    A walk's frontier (the rows of its recursive CTE, the nodes it reached) is a handful of
    rows, but SQLite, with statistics (`ANALYZE`), estimates it at many and puts a Bloom
    filter in front of each index lookup from it: built by reading every entry of the
    index, at each run. That made a levels=1 walk on the medium store 38 ms instead of 4.
    SQLite's `likelihood` says the condition rarely holds, so the estimate stays small;
    PostgreSQL sees the condition as it is. (Typed as no type: SQLite writes a boolean
    function in a WHERE clause as `... = 1`, and a compared `likelihood` is no hint.)"""

    type: sa.types.TypeEngine[Any] = sa.types.NullType()
    inherit_cache = True


def frontier(condition: sa.ColumnElement[bool], as_of: object | None) -> sa.ColumnElement[Any]:
    """A condition on a walk's frontier: `few_rows(condition)`, except in a walk as of a time
    (`as_of` not None), which reads the runs' rows beside the declarations then in force and
    keeps the plan it had: with the hint, SQLite planned a `both` walk at levels=5 as of a
    time past its 30 s timeout, against 2.9 s without."""
    return condition if as_of is not None else few_rows(condition)


@compiles(few_rows)
def _condition(element: few_rows, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.clauses, **kw)})"


@compiles(few_rows, "sqlite")
def _rarely_true(element: few_rows, compiler: Any, **kw: Any) -> str:
    return f"likelihood({compiler.process(element.clauses, **kw)}, 0.001)"


@contextmanager
def planned_once(conn: Connection, as_of: object | None = None) -> Iterator[None]:
    """Run the statements inside under one plan per connection, made for any values of their
    parameters (PostgreSQL's generic plan of a statement prepared at its first run), rather
    than planned anew for each run's values.

    A walk's recursive statement took 10-15 ms to plan and 1-6 ms to run at a few levels,
    and the plan made for the actual values was never faster on the medium store at any
    depth (docs/performance.md). Only for statements written to plan well without their
    values: a constant a partial index names is written into the text (`constant`).

    A walk `as_of` a time (not None) is planned for its values as before: it reads the runs'
    rows beside the declarations then in force, and its generic plan ran past the statement
    timeout (30 s) on the medium store, where the plan for its values takes 2-3 s."""
    if conn.dialect.name != "postgresql" or as_of is not None:
        yield
        return
    driver: Any = conn.connection.dbapi_connection
    threshold = driver.prepare_threshold
    conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
    driver.prepare_threshold = 0
    try:
        yield
    finally:
        driver.prepare_threshold = threshold
    conn.exec_driver_sql("SET LOCAL plan_cache_mode TO DEFAULT")


def id_groups(conn: Connection, ids: Iterable[str]) -> Iterator[list[str]]:
    """`ids` (as text) in the groups `text_id_filters` makes one statement of each: all at
    once on PostgreSQL, `CHUNK` at a time on SQLite. For a statement that filters several
    columns by the same ids, one `text_id_filters` per column and group."""
    wanted = sorted(set(ids))
    if conn.dialect.name != "postgresql":
        yield from chunks(wanted)
    elif wanted:
        yield wanted


def id_text(column: Any, dialect: str) -> sa.ColumnElement[str]:
    """The hyphenated text of a uuid column (NULL stays NULL), the form answers show:
    PostgreSQL casts it; SQLite keeps uuids as 32 hex digits, which are cut into the same
    groups. Text costs a fraction of `uuid.UUID` to make, hash and compare (its hash is
    Python code), and a walk does that tens of thousands of times."""
    if dialect == "postgresql":
        return sa.cast(column, sa.Text)
    hex_digits = sa.type_coerce(column, sa.Text)
    groups = [sa.func.substr(hex_digits, start, size) for start, size in _UUID_GROUPS]
    joined: sa.ColumnElement[str] = groups[0]
    for group in groups[1:]:
        joined = joined + "-" + group
    return joined


def epoch_microseconds(column: Any, dialect: str) -> sa.ColumnElement[int]:
    """Microseconds since 1970 of a timestamp column, an exact integer on both databases,
    for ordering many rows by time without a `datetime` made for each. SQLite keeps an
    instant as SQLAlchemy writes it, `YYYY-MM-DD HH:MM:SS.ffffff` in UTC."""
    if dialect == "postgresql":
        return sa.cast(sa.extract("epoch", column) * 1_000_000, sa.BigInteger)
    text = sa.type_coerce(column, sa.Text)
    # Whole seconds of the text without its fraction (with it, SQLite rounds toward zero).
    seconds = sa.cast(sa.func.strftime("%s", sa.func.substr(text, 1, 19)), sa.BigInteger)
    return seconds * 1_000_000 + sa.cast(sa.func.substr(text, 21, 6), sa.BigInteger)


#: Where each group of a uuid's hyphenated text starts in its 32 hex digits, and its length.
_UUID_GROUPS = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))


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


def defer_key_checks(conn: Connection) -> None:
    """Check this transaction's foreign keys when `check_deferred_keys` is called, not at
    each statement: a write stores its runs' rows before the jobs, datasets and sets they
    name (`store.writer.write_shared_rows`). On PostgreSQL that holds for the keys declared
    deferrable (migration 0013); SQLite defers every key until the transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET CONSTRAINTS ALL DEFERRED")
    else:
        conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")


def check_deferred_keys(conn: Connection) -> None:
    """Check the keys `defer_key_checks` deferred, now. On PostgreSQL they would otherwise be
    checked by the commit, after the change log's append (`store.change_log`), while its
    lock serialises every writer. SQLite has one writer at a time: its commit checks them."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET CONSTRAINTS ALL IMMEDIATE")


def advisory_xact_locks(
    conn: Connection, ids: Iterable[uuid.UUID], *, shared: bool = False
) -> None:
    """Hold a PostgreSQL transaction-level advisory lock on each id until commit, taken in
    key order so that two writers never wait on each other in a cycle; `shared` ones only
    exclude the exclusive ones. SQLite's write lock already serialises writers."""
    keys = sorted({_lock_key(i) for i in ids})
    if conn.dialect.name != "postgresql" or not keys:
        return
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    conn.exec_driver_sql(
        f"SELECT {function}(k) FROM (SELECT k FROM unnest(%(keys)s::bigint[]) AS k "
        "ORDER BY k) AS ordered",
        {"keys": keys},
    )


def _lock_key(value: uuid.UUID) -> int:
    """A signed 64-bit key from an id (its top 64 bits)."""
    key = value.int >> 64
    return key - (1 << 64) if key >= 1 << 63 else key


def names_a_dataset_in(
    conn: Connection, payload: sa.ColumnElement[Any], namespace: str
) -> sa.ColumnElement[bool]:
    """The event JSON in `payload` (text) lists an input or output in `namespace`: SQLite
    walks it with json_each, PostgreSQL with jsonb_array_elements."""
    if conn.dialect.name == "postgresql":
        document = sa.cast(payload, postgresql.JSONB)
        nothing = sa.cast("[]", postgresql.JSONB)
        datasets = sa.func.coalesce(document["inputs"], nothing).op("||")(
            sa.func.coalesce(document["outputs"], nothing)
        )
        elements = sa.func.jsonb_array_elements(datasets).table_valued(
            sa.column("value", postgresql.JSONB)
        )
        return (
            sa.select(1)
            .select_from(elements)
            .where(elements.c.value["namespace"].astext == namespace)
        ).exists()
    found = [
        sa.select(1)
        .select_from(listed)
        .where(sa.func.json_extract(listed.c.value, "$.namespace") == namespace)
        .exists()
        for listed in (
            sa.func.json_each(payload, f"$.{key}").table_valued("value")
            for key in ("inputs", "outputs")
        )
    ]
    return sa.or_(*found)


def has_json_key(
    conn: Connection, document: sa.ColumnElement[Any], key: str
) -> sa.ColumnElement[bool]:
    """The JSON object `document` holds `key` at its top level (a `facets` column holding a
    facet), in a form each database answers without reading the rest of the document."""
    if conn.dialect.name == "postgresql":
        has: sa.ColumnElement[bool] = sa.cast(document, postgresql.JSONB).has_key(key)
        return has
    quoted = key.replace('"', '""')
    return sa.func.json_type(document, f'$."{quoted}"').is_not(None)
