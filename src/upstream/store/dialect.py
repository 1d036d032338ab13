"""Statements whose SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from upstream.model.json_text import dumps
from upstream.store.copy_rows import copy_rows, copy_rows_ignoring

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
    From `COPY_ROWS` rows on, the raw events go by binary COPY into a staging table instead
    (`STAGED_COPY`), and `insert_rows` by binary COPY into the table (`store.copy_rows`).
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
    if len(rows) >= COPY_ROWS:
        if key is None:
            copy_rows(conn, table, rows)
            return set()
        if table.name in STAGED_COPY:
            return copy_rows_ignoring(conn, table, rows, key, conflict or (key,))
    return unnest_rows(conn, table, rows, key, conflict)


#: Rows from which a PostgreSQL bulk insert goes by binary COPY (`store.copy_rows`): below
#: it, the statements' fixed costs outweigh what COPY saves per row.
COPY_ROWS = 100

#: The tables whose skipping inserts go by COPY into a staging table: the raw events, the
#: widest rows, where COPY was 1.36-1.48x unnest's speed in every run of `python -m
#: benchmarks bulk`. For runs, relations and dataset versions it was 1.13-1.57x on a calm
#: machine but 0.66-0.9x on a busy one, where the staging table's three extra round trips
#: cost more than COPY saves; for lineage sets and links it was slower in every run.
STAGED_COPY = frozenset({"events"})


def unnest_rows(
    conn: Connection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: str | None,
    conflict: Sequence[str] = (),
) -> set[Any]:
    """PostgreSQL's `INSERT … SELECT FROM unnest(…)` of `rows` (see `insert_rows_ignoring`);
    without a `key`, every row is inserted and nothing returned."""
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
    convert = _bind_processors(dialect, table, tuple(rows[0]))
    quote = dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(table.name)} ({', '.join(quote(c.name) for c in columns)}) VALUES "
    tail = ""
    read_key: Callable[[Any], Any] = _as_stored
    if key is not None:
        read_key = _result_processor(dialect, table, key) or read_key
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


@functools.lru_cache(maxsize=256)
def _bind_processors(
    dialect: sa.Dialect, table: sa.Table, names: tuple[str, ...]
) -> list[Callable[[Any], Any] | None]:
    """Each column's conversion to what SQLite stores, made once per table and columns: a
    one-event write inserts into a dozen tables, and making them took 2 % of its CPU."""
    return [table.c[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names]


@functools.lru_cache(maxsize=256)
def _result_processor(
    dialect: sa.Dialect, table: sa.Table, name: str
) -> Callable[[Any], Any] | None:
    """The conversion of what SQLite returns of `name` (the inserted keys), made once."""
    return table.c[name].type.dialect_impl(dialect).result_processor(dialect, None)


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
    for part in chunks(in_id_order(wanted)):
        # One list parameter: `in_` of the list itself coerces each id to a parameter of its
        # own, a cost per id paid again by every statement of every write.
        yield column.in_(sa.bindparam(None, part, expanding=True, type_=column.type))


class ByIds:
    """A statement over the rows whose `column` is one of a list of ids, built once per
    dialect by `build` (given the condition) and run with the ids as its one parameter
    (`ids`), as `id_filters` splits them: one array on PostgreSQL, an IN list per `CHUNK`
    ids on SQLite.

    For the lookups every write makes: a statement made per call cost its construction and
    its cache key, 70 µs more than running one made once (`tests/store/test_by_ids.py`),
    and a one-event write makes a dozen of them."""

    def __init__(
        self,
        column: sa.ColumnElement[Any],
        build: Callable[[sa.ColumnElement[bool]], sa.Executable],
    ) -> None:
        self._column = column
        self._build = build
        self._made: dict[str, sa.Executable] = {}

    def statement(self, conn: Connection) -> sa.Executable:
        """The statement for `conn`'s dialect (made on first use; the same object after)."""
        name = conn.dialect.name
        made = self._made.get(name)
        if made is None:
            column = self._column
            if name == "postgresql":
                array = sa.bindparam("ids", type_=postgresql.ARRAY(column.type))
                condition = column == sa.any_(array)
            else:
                condition = column.in_(sa.bindparam("ids", expanding=True, type_=column.type))
            made = self._made[name] = self._build(condition)
        return made

    def run(
        self, conn: Connection, ids: Iterable[Any], **params: Any
    ) -> Iterator[sa.CursorResult[Any]]:
        """The statement's result for each group of `ids` (none for no ids); `params` are
        its other parameters, by name."""
        wanted = set(ids)
        if not wanted:
            return
        statement = self.statement(conn)
        if conn.dialect.name == "postgresql":
            yield conn.execute(statement, {"ids": list(wanted), **params})
            return
        for part in chunks(in_id_order(wanted)):
            yield conn.execute(statement, {"ids": part, **params})


def text_id_filters(
    conn: Connection, column: sa.ColumnElement[Any], ids: Iterable[str]
) -> Iterator[sa.ColumnElement[bool]]:
    """`id_filters` for ids given as their hyphenated text (`id_text`), which the database
    compares without a `uuid.UUID` being made for each: PostgreSQL casts one text array,
    SQLite compares its stored 16 bytes with each text's."""
    wanted = set(ids)
    if not wanted:
        return
    if conn.dialect.name == "postgresql":
        array = sa.bindparam(None, list(wanted), type_=postgresql.ARRAY(sa.Text))
        yield column == sa.any_(sa.cast(array, postgresql.ARRAY(sa.Uuid)))
        return
    stored = sa.type_coerce(column, sa.LargeBinary)
    for part in chunks(sorted(bytes.fromhex(text.replace("-", "")) for text in wanted)):
        yield stored.in_(sa.bindparam(None, part, expanding=True, type_=sa.LargeBinary))


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
    PostgreSQL casts it; SQLite keeps a uuid's 16 bytes (`schema.Id`), which `uuid_text`
    writes (a function each SQLite connection of a store registers). Text costs a fraction of
    `uuid.UUID` to make, hash and compare (its hash is Python code), and a walk does that
    tens of thousands of times."""
    if dialect == "postgresql":
        return sa.cast(column, sa.Text)
    return sa.func.uuid_text(column, type_=sa.Text)


def uuid_text(stored: bytes | None) -> str | None:
    """A uuid's 16 bytes as its hyphenated text, SQLite's `uuid_text(column)`: one Python
    call a value took 0.15 s for the 175,640 ids of medium's flows, where SQLite's own
    `hex`, `substr` and `lower` for each of the five groups took 0.26 s, and the graph index
    reads ids this way every time it loads."""
    if stored is None:
        return None
    return (
        f"{stored[:4].hex()}-{stored[4:6].hex()}-{stored[6:8].hex()}-"
        f"{stored[8:10].hex()}-{stored[10:].hex()}"
    )


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


#: A UUID's integer, which `UUID.__lt__` compares (in Python, a call per comparison).
_UUID_INT = operator.attrgetter("int")


def in_id_order(ids: Iterable[T]) -> list[T]:
    """`sorted(ids)`: UUIDs in the order `UUID.__lt__` gives, compared as integers in C; a
    batch's write sorted its ids with 200,000 calls of `__lt__` (small workload, 2,250 events)."""
    ordered = list(ids)
    if ordered and isinstance(ordered[0], uuid.UUID):
        ordered.sort(key=_UUID_INT)
    else:
        ordered.sort()
    return ordered


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
    exclude the exclusive ones. SQLite's write lock already serialises writers.

    A lock the transaction already holds (an exclusive one, or a shared one asked again as
    shared) is not asked again: a write's steps lock the same runs in turn, and each request
    costs a round trip."""
    if conn.dialect.name != "postgresql":
        return
    held = _held_locks(conn)
    wanted = {_lock_key(i) for i in ids}
    keys = sorted(k for k in wanted if k not in held or (held[k] and not shared))
    if not keys:
        return
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    conn.exec_driver_sql(
        f"SELECT {function}(k) FROM (SELECT k FROM unnest(%(keys)s::bigint[]) AS k "
        "ORDER BY k) AS ordered",
        {"keys": keys},
    )
    held.update(dict.fromkeys(keys, shared))  # an exclusive lock replaces a shared one


_HELD_LOCKS = "upstream_held_locks"


def _held_locks(conn: Connection) -> dict[int, bool]:
    """The advisory keys this transaction holds, each True when held shared only. Tagged
    with the transaction and its savepoint, whose rollback releases the locks it took."""
    tag = (conn.get_transaction(), conn.get_nested_transaction())
    memo = conn.info.get(_HELD_LOCKS)
    if memo is None or memo[0] != tag:
        memo = conn.info[_HELD_LOCKS] = (tag, {})
    held: dict[int, bool] = memo[1]
    return held


def try_advisory_xact_lock(conn: Connection, ident: uuid.UUID) -> bool:
    """Take a PostgreSQL transaction-level advisory lock on `ident` unless another
    transaction holds it (True when taken), without waiting. SQLite's write lock already
    serialises writers."""
    if conn.dialect.name != "postgresql":
        return True
    taken = conn.exec_driver_sql(
        "SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": _lock_key(ident)}
    ).scalar()
    return bool(taken)


def _lock_key(value: uuid.UUID) -> int:
    """A signed 64-bit key from an id (its top 64 bits)."""
    key = value.int >> 64
    return key - (1 << 64) if key >= 1 << 63 else key


def names_a_namespace(
    conn: Connection,
    document: sa.ColumnElement[Any],
    test: Callable[[sa.ColumnElement[str]], sa.ColumnElement[bool]],
) -> sa.ColumnElement[bool]:
    """Some object anywhere in the JSON of `document` (text) holds a `namespace` string that
    passes `test`: SQLite walks every member with json_tree, PostgreSQL with the jsonpath
    `strict $.**.namespace` (each member so keyed, at any depth, in arrays too)."""
    if conn.dialect.name == "postgresql":
        found = (
            sa.func.jsonb_path_query(
                sa.cast(document, postgresql.JSONB),
                sa.cast(sa.literal("strict $.**.namespace"), postgresql.JSONPATH),
            )
            .table_valued(sa.column("value", postgresql.JSONB))
            .render_derived()
        )
        text = found.c.value.op("#>>", return_type=sa.Text)(sa.literal_column("'{}'"))
        is_text = sa.func.jsonb_typeof(found.c.value) == "string"
        return sa.select(1).select_from(found).where(is_text, test(text)).exists()
    members = sa.func.json_tree(document).table_valued("key", "type", "atom")
    return (
        sa.select(1)
        .select_from(members)
        .where(members.c.key == "namespace", members.c.type == "text", test(members.c.atom))
        .exists()
    )


def lists_a_namespace(
    conn: Connection,
    listed: sa.ColumnElement[Any],
    test: Callable[[sa.ColumnElement[str]], sa.ColumnElement[bool]],
) -> sa.ColumnElement[bool]:
    """Some string of the JSON array `listed` (text: an event's `namespaces`) passes `test`:
    the array's elements as rows (PostgreSQL's `jsonb_array_elements_text`, SQLite's
    `json_each`), without reading anything else of the row."""
    if conn.dialect.name == "postgresql":
        elements = (
            sa.func.jsonb_array_elements_text(sa.cast(listed, postgresql.JSONB))
            .table_valued(sa.column("value", sa.Text))
            .render_derived()
        )
        return sa.select(1).select_from(elements).where(test(elements.c.value)).exists()
    members = sa.func.json_each(listed).table_valued("value")
    return sa.select(1).select_from(members).where(test(members.c.value)).exists()


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
