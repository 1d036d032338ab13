"""The figures printed beside an ingest's events/s: bytes stored per event (the raw events and
the derived rows apart), the time backends spent waiting on locks while writers ran side by
side, and how fast `upstream db rebuild` derives the same store again.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from types import TracebackType

from upstream.store import schema
from upstream.store.engine import Store

#: The tables holding the raw events (and the dictionaries they are compressed with,
#: `upstream.store.payloads`); every other table of the schema holds derived rows.
RAW = ("events", "event_dictionaries")


def stored_bytes(url: str) -> dict[str, int]:
    """Bytes on disk of the raw events and of everything else Upstream keeps (tables with
    their indexes and, on PostgreSQL, their TOAST and every monthly partition)."""
    store = Store(url)
    try:
        with store.engine.connect() as conn:
            if store.dialect == "postgresql":
                rows = conn.exec_driver_sql(
                    "SELECT t.name, COALESCE(SUM(pg_total_relation_size(p.relid)), 0) "
                    "FROM unnest(%(names)s::text[]) AS t(name), "
                    # The table itself and its partitions: pg_partition_tree lists none of a
                    # table that is not partitioned.
                    "LATERAL (SELECT relid FROM pg_partition_tree(t.name::regclass) "
                    "UNION SELECT t.name::regclass) AS p GROUP BY t.name",
                    {"names": [table.name for table in schema.metadata.sorted_tables]},
                )
            else:
                rows = conn.exec_driver_sql(
                    "SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat AS d "
                    "JOIN sqlite_master AS m ON m.name = d.name GROUP BY m.tbl_name"
                )
            sizes = {str(name): int(size) for name, size in rows}
    finally:
        store.dispose()
    raw = sum(sizes.pop(name, 0) for name in RAW)
    return {"raw_events": raw, "derived": sum(sizes.values())}


def rebuild_seconds(url: str) -> float:
    """Wall seconds of `upstream db rebuild` on the store at `url` (start-up included)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "upstream", "db", "rebuild", "--db", url],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


class LockWaits:
    """Backend-seconds spent waiting on a lock in one PostgreSQL database while the block
    runs, sampled about every `interval` seconds from `pg_stat_activity` (each backend seen
    waiting counts for the time since the sample before, not for the nominal interval: on a
    busy machine samples come late, and counting intervals undercounted the waits): an
    estimate, good to a few intervals. SQLite's writers wait on its one write lock inside the
    Upstream process, where no view shows it: 0 there."""

    def __init__(self, url: str, interval: float = 0.02) -> None:
        self.url = url
        self.interval = interval
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LockWaits:
        store = Store(self.url)
        if store.dialect == "postgresql":
            self._thread = threading.Thread(target=self._sample, args=(store,), daemon=True)
            self._thread.start()
        else:
            store.dispose()
        return self

    def _sample(self, store: Store) -> None:
        try:
            with store.engine.connect() as conn:
                conn.exec_driver_sql("SET statement_timeout = 0")
                sampled = time.monotonic()
                while not self._stop.wait(self.interval):
                    waiting = conn.exec_driver_sql(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND wait_event_type = 'Lock'"
                    ).scalar_one()
                    conn.rollback()
                    now = time.monotonic()
                    self.seconds += int(waiting) * (now - sampled)
                    sampled = now
        finally:
            store.dispose()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
