"""Binary COPY against `INSERT … SELECT FROM unnest` for the write path's bulk inserts, on
PostgreSQL, in the same run on the same rows.

The workload is loaded once into a fresh database; then, for each table the write path fills
in bulk, its stored rows are read back (as the writer hands them over: uuids, aware datetimes,
JSON documents as Python values) and inserted again in as many statements as the workload's
batches of `batch` events made, once by each method, alternating, `repetitions` times. Each
try empties the table first (`TRUNCATE … CASCADE` in the try's transaction, which is then
rolled back), so foreign keys to the rows it names are checked as in a real write, and the
commit, the same for both, is left out. Tables whose inserts skip rows already stored go
through a staging table for COPY (`upstream.store.copy_rows.copy_rows_ignoring`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchmarks.databases import fresh_database
from benchmarks.generator import load_summary
from benchmarks.queries import load_store
from upstream.store import schema as t
from upstream.store.copy_rows import copy_rows, copy_rows_ignoring
from upstream.store.dialect import chunks, unnest_rows
from upstream.store.engine import Store
from upstream.store.months import RUN_COLUMN

#: The tables the write path inserts thousands of rows into per batch, with the key whose
#: stored rows an insert skips (None: every row is new).
TABLES: tuple[tuple[sa.Table, str | None], ...] = (
    (t.lineage_set_edges, None),
    (t.flows, None),
    (t.events, "event_key"),
    (t.dataset_versions, "id"),
    (t.relations, "id"),
    (t.run_operation_sets, "id"),
    (t.lineage_links, "id"),
    (t.lineage_sets, "id"),
    (t.runs, "id"),
)

Rows = Sequence[Mapping[str, Any]]
Insert = Callable[[Connection, sa.Table, Rows, str | None], None]


@dataclass
class BulkResult:
    table: str
    rows: int
    statements: int
    unnest_s: float
    copy_s: float

    @property
    def ratio(self) -> float:
        """COPY's speed as a multiple of unnest's (above 1: COPY is faster)."""
        return self.unnest_s / self.copy_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "rows": self.rows,
            "statements": self.statements,
            "unnest_s": round(self.unnest_s, 4),
            "copy_s": round(self.copy_s, 4),
            "copy_speedup": round(self.ratio, 2),
        }


def run_bulk(data_dir: Path, work_dir: Path, batch: int, repetitions: int) -> list[BulkResult]:
    """Each table's median seconds by both methods, on a fresh PostgreSQL store."""
    batches = max(1, -(-load_summary(data_dir)["events"] // batch))
    results = []
    with fresh_database("postgresql", f"{data_dir.name}_bulk_postgresql", work_dir) as url:
        load_store(url, data_dir, batch=batch)
        store = Store(url)
        try:
            for table, key in TABLES:
                with store.engine.connect() as conn:
                    rows = [dict(r._mapping) for r in conn.execute(sa.select(table))]
                if not rows:
                    continue
                size = -(-len(rows) // batches)
                times: dict[str, list[float]] = {"unnest": [], "copy": []}
                for _ in range(repetitions):
                    for method, insert in (("unnest", _unnest), ("copy", _copy)):
                        times[method].append(_timed(store, table, key, rows, size, insert))
                results.append(
                    BulkResult(
                        table.name,
                        len(rows),
                        -(-len(rows) // size),
                        statistics.median(times["unnest"]),
                        statistics.median(times["copy"]),
                    )
                )
        finally:
            store.dispose()
    return results


def _timed(
    store: Store, table: sa.Table, key: str | None, rows: Rows, size: int, insert: Insert
) -> float:
    with store.engine.connect() as conn:
        conn.exec_driver_sql(f"TRUNCATE {table.name} CASCADE")
        started = time.perf_counter()
        for part in chunks(rows, size):
            insert(conn, table, part, key)
        elapsed = time.perf_counter() - started
        conn.rollback()
    return elapsed


def _conflict(table: sa.Table, key: str) -> tuple[str, ...]:
    return (key, "month") if table.name in RUN_COLUMN else (key,)


def _unnest(conn: Connection, table: sa.Table, rows: Rows, key: str | None) -> None:
    unnest_rows(conn, table, rows, key, () if key is None else _conflict(table, key))


def _copy(conn: Connection, table: sa.Table, rows: Rows, key: str | None) -> None:
    if key is None:
        copy_rows(conn, table, rows)
    else:
        copy_rows_ignoring(conn, table, rows, key, _conflict(table, key))
