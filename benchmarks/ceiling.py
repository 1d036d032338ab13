"""The ingest ceiling: the rows Upstream stored, written again by the bare database client
into twin tables (same columns, keys and indexes) in the same database. PostgreSQL: one COPY per
table; SQLite: one `executemany` per table, with the store's own pragmas. Rows are read before
the clock starts, so only the writing is timed, in one transaction."""

from __future__ import annotations

import re
import time
from typing import Any

from upstream.store import schema as t
from upstream.store.engine import Store

PREFIX = "ceiling_"


def ceiling_seconds(url: str) -> float:
    """Seconds the bare client needs to write every stored row again."""
    store = Store(url)
    try:
        raw = store.engine.raw_connection()
        try:
            if store.dialect == "postgresql":
                return _postgresql(raw)
            return _sqlite(raw)
        finally:
            raw.close()
    finally:
        store.dispose()


def _tables() -> list[str]:
    return [table.name for table in t.metadata.sorted_tables]


def _postgresql(raw: Any) -> float:
    dumps: dict[str, bytes] = {}
    with raw.cursor() as cur:
        for name in _tables():
            cur.execute(f"DROP TABLE IF EXISTS {PREFIX}{name}")
            cur.execute(f"CREATE TABLE {PREFIX}{name} (LIKE {name} INCLUDING ALL)")
            buffer = bytearray()
            with cur.copy(f"COPY {name} TO STDOUT") as copy:
                for block in copy:
                    buffer += block
            dumps[name] = bytes(buffer)
    raw.commit()
    started = time.perf_counter()
    with raw.cursor() as cur:
        for name, data in dumps.items():
            with cur.copy(f"COPY {PREFIX}{name} FROM STDIN") as copy:
                copy.write(data)
    raw.commit()
    return time.perf_counter() - started


_CREATE_TABLE = re.compile(r'^CREATE TABLE "?(\w+)"?')
_CREATE_INDEX = re.compile(r'^CREATE (UNIQUE )?INDEX "?(\w+)"? ON "?(\w+)"?')


def _sqlite(raw: Any) -> float:
    cur = raw.cursor()
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for name in _tables():
        cur.execute(f"DROP TABLE IF EXISTS {PREFIX}{name}")
        ddl = cur.execute(
            "SELECT type, sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL "
            "ORDER BY type DESC",
            (name,),
        ).fetchall()
        for kind, sql in ddl:
            if kind == "table":
                cur.execute(_CREATE_TABLE.sub(rf"CREATE TABLE {PREFIX}\1", sql))
            else:
                cur.execute(_CREATE_INDEX.sub(rf"CREATE \1INDEX {PREFIX}\2 ON {PREFIX}\3", sql))
        rows[name] = cur.execute(f"SELECT * FROM {name}").fetchall()
    started = time.perf_counter()
    cur.execute("BEGIN IMMEDIATE")
    for name, values in rows.items():
        if values:
            marks = ", ".join("?" * len(values[0]))
            cur.executemany(f"INSERT INTO {PREFIX}{name} VALUES ({marks})", values)
    cur.execute("COMMIT")
    elapsed = time.perf_counter() - started
    cur.close()
    return elapsed
