"""Making an SQLite table again, as SQLite changes what ALTER TABLE cannot (a column's type,
the key, WITHOUT ROWID: https://sqlite.org/lang_altertable.html#otheralter), for migrations.

A new table is made from the old one's own statement, rewritten, and filled from the old one;
the old one is dropped and the new one given its name; its indexes are made again from their
own statements, and the planner's statistics of the old one kept (dropping a table deletes
them). Everything else about the table stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def without_foreign_keys(bind: Connection) -> Iterator[None]:
    """Foreign keys off, in a transaction of its own (SQLite would check every row of a table
    others refer to as it is dropped): SQLite changes `foreign_keys` only outside a
    transaction, so what the migration's transaction holds is committed first, and it goes on
    after (in SQLite's terms, under the same SQLAlchemy transaction)."""
    raw: Any = bind.connection.dbapi_connection
    was_open = raw.in_transaction
    if was_open:
        raw.execute("COMMIT")
    raw.execute("PRAGMA foreign_keys = OFF")
    raw.execute("BEGIN IMMEDIATE")
    try:
        yield
        raw.execute("COMMIT")
    except BaseException:
        raw.execute("ROLLBACK")
        raise
    finally:
        raw.execute("PRAGMA foreign_keys = ON")
        if was_open:
            raw.execute("BEGIN")


def table_statement(bind: Connection, table: str) -> str:
    """The statement SQLite keeps for `table`."""
    [made] = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalars()
    return str(made)


def remake(
    bind: Connection,
    table: str,
    aside: str,
    rewrite: Callable[[str], str],
    value: Callable[[str], str] = quoted,
) -> None:
    """`table` made again by `rewrite` of its statement (already naming the new table
    `aside`), each column filled with `value` (SQL) of its name: by default the same value."""
    statement = re.sub(
        rf"^CREATE TABLE\s+(\"?){re.escape(table)}\1",
        f"CREATE TABLE {quoted(aside)}",
        table_statement(bind, table),
    )
    indexes = list(
        bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL",
            (table,),
        ).scalars()
    )
    statistics = _statistics(bind, table)
    bind.exec_driver_sql(rewrite(statement))
    names = [row[1] for row in bind.exec_driver_sql(f"PRAGMA table_info({quoted(table)})")]
    columns = ", ".join(quoted(name) for name in names)
    values = ", ".join(value(name) for name in names)
    bind.exec_driver_sql(
        f"INSERT INTO {quoted(aside)} ({columns}) SELECT {values} FROM {quoted(table)}"
    )
    bind.exec_driver_sql(f"DROP TABLE {quoted(table)}")
    bind.exec_driver_sql(f"ALTER TABLE {quoted(aside)} RENAME TO {quoted(table)}")
    for index in indexes:
        bind.exec_driver_sql(index)
    for stat, rows in statistics.items():
        for row in rows:
            marks = ", ".join("?" * len(row))
            bind.exec_driver_sql(f"INSERT INTO {stat} VALUES ({marks})", tuple(row))


def _statistics(bind: Connection, table: str) -> dict[str, list[tuple[Any, ...]]]:
    """The planner's statistics of `table` (`ANALYZE`'s rows in sqlite_stat1, and in
    sqlite_stat4 where SQLite keeps it), which dropping it deletes: the same rows, with the
    same index names, hold for the new table."""
    held = bind.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE name IN ('sqlite_stat1', 'sqlite_stat4')"
    ).scalars()
    return {
        stat: [
            tuple(row)
            for row in bind.exec_driver_sql(f"SELECT * FROM {stat} WHERE tbl = ?", (table,))
        ]
        for stat in held.all()
    }
