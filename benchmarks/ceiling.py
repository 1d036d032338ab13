"""The ingest ceiling: the least any event store must do, at the database's own speed.

Every event's raw payload with its key (the SHA-256 of its canonical JSON, as Upstream keys
events) goes into a bare table (`event_key` primary key, `payload` text) in the same database,
right after the measured ingest: on PostgreSQL by `COPY … FROM STDIN`, on SQLite by
`executemany` with the store's own pragmas (WAL, `synchronous=FULL`), in one transaction.
Keys and COPY text are made before the clock starts, in slices of at most `SLICE_BYTES` so
that the large workload never sits in memory whole; only the writing and the commit are timed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

from upstream.model.json_text import content_key
from upstream.store.engine import Store

TABLE = "ceiling_events"
SLICE_BYTES = 256 * 1024 * 1024
_DDL = f"CREATE TABLE {TABLE} (event_key VARCHAR(64) PRIMARY KEY, payload TEXT NOT NULL)"


def event_key(payload: str) -> str:
    """The SHA-256 of the event's canonical JSON (sorted keys, no spaces), as Upstream's."""
    return content_key(json.loads(payload))


def ceiling_seconds(url: str, payloads: Iterable[str]) -> float:
    """Seconds the bare client needs to store every payload with its key; the table is
    dropped afterwards, so the database is left as the ingest made it."""
    store = Store(url)
    try:
        raw = store.engine.raw_connection()
        try:
            if store.dialect == "postgresql":
                return _postgresql(raw, payloads)
            return _sqlite(raw, payloads)
        finally:
            raw.close()
    finally:
        store.dispose()


def _slices(payloads: Iterable[str]) -> Iterator[list[tuple[str, str]]]:
    """(key, payload) rows in slices of at most SLICE_BYTES of payload."""
    rows: list[tuple[str, str]] = []
    size = 0
    for payload in payloads:
        rows.append((event_key(payload), payload))
        size += len(payload)
        if size >= SLICE_BYTES:
            yield rows
            rows, size = [], 0
    if rows:
        yield rows


def _copy_text(rows: list[tuple[str, str]]) -> bytes:
    """COPY's text format: JSON text holds no raw tab or newline, so only `\\` is escaped."""
    lines = (f"{key}\t{payload.replace(chr(92), chr(92) * 2)}\n" for key, payload in rows)
    return "".join(lines).encode()


def _postgresql(raw: Any, payloads: Iterable[str]) -> float:
    with raw.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cur.execute(_DDL)
    raw.commit()
    elapsed = 0.0
    with raw.cursor() as cur:
        for rows in _slices(payloads):
            data = _copy_text(rows)
            started = time.perf_counter()
            with cur.copy(f"COPY {TABLE} (event_key, payload) FROM STDIN") as copy:
                copy.write(data)
            elapsed += time.perf_counter() - started
        started = time.perf_counter()
        raw.commit()
        elapsed += time.perf_counter() - started
        cur.execute(f"DROP TABLE {TABLE}")
    raw.commit()
    return elapsed


def _sqlite(raw: Any, payloads: Iterable[str]) -> float:
    cur = raw.cursor()
    cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cur.execute(_DDL)
    elapsed = 0.0
    started = time.perf_counter()
    cur.execute("BEGIN IMMEDIATE")
    elapsed += time.perf_counter() - started
    for rows in _slices(payloads):
        started = time.perf_counter()
        cur.executemany(f"INSERT INTO {TABLE} (event_key, payload) VALUES (?, ?)", rows)
        elapsed += time.perf_counter() - started
    started = time.perf_counter()
    cur.execute("COMMIT")
    elapsed += time.perf_counter() - started
    cur.execute(f"DROP TABLE {TABLE}")
    cur.close()
    return elapsed
