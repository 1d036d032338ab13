"""Ingest throughput: the workload's events into a fresh database, by one path at a time.

- `http-batch`: JSON arrays of `batch` events posted to a live `upstream serve` over
  `batch_connections` keep-alive connections.
- `http-single`: one event per POST, `concurrency` keep-alive connections at once.
- `http-paced`: one event per POST over `PACED_CONNECTIONS` connections, offered at
  `PACED_RATE` events/s: the acknowledgement latency a steady producer sees (p50, p99).
- `cli`: `upstream ingest --db URL events.ndjson` when the command exists, else the same
  in-process path it wraps (`ingest_documents` over batches), reported as `in-process`.
- `kafka`: `consumers` `upstream consume` processes drain a pre-filled topic
  (`kafka_ingest.py`).

Requests are made from the events file as they are sent (a batch is one join of lines, far
cheaper than the server's work on it), so the large workload never sits in memory. Every run is
followed, on the same database, by the ceiling (the same events' raw payloads with their keys,
by COPY or bare executemany into a bare table, `ceiling.py`), the exactness check against
the ground truth and the bytes stored per event (`ingest_figures.py`); the batched path also
by `upstream db rebuild` of the store it filled, timed against the same ceiling.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.ceiling import ceiling_seconds
from benchmarks.databases import fresh_database
from benchmarks.exactness import check
from benchmarks.generator import in_chunks, load_summary, load_truth, read_events
from benchmarks.ingest_figures import LockWaits, rebuild_seconds, stored_bytes
from benchmarks.kafka_ingest import consume_seconds
from benchmarks.server import Server, cpu_seconds, post_request, send_all, send_paced
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store

MODES = ("http-batch", "http-single", "http-paced", "cli", "kafka")
#: The steady producers of `http-paced`: events/s offered, and connections they post over.
PACED_RATE = 200.0
PACED_CONNECTIONS = 32


@dataclass
class IngestResult:
    mode: str
    db: str
    events: int
    seconds: float
    ceiling_seconds: float
    detail: str = ""
    #: CPU seconds the server (or CLI) processes and the database spent: a figure that busy
    #: neighbours on the machine change far less than the wall-clock rate.
    cpu_seconds: float = 0.0
    exactness: list[dict[str, Any]] = field(default_factory=list)
    #: Median, p10 and p90 of the workload's event sizes in bytes.
    event_bytes: dict[str, int] = field(default_factory=dict)
    #: The 1, 5 and 15-minute load average when the ingest ended (the machine is shared).
    load: list[float] = field(default_factory=list)
    #: Backend-seconds PostgreSQL's writers spent waiting on locks (`LockWaits`).
    lock_wait_seconds: float = 0.0
    #: `http-paced`: p50 and p99 milliseconds from an event's due time to its 201.
    latency_ms: dict[str, float] = field(default_factory=dict)
    #: Bytes stored per event: the raw events and the derived rows apart.
    bytes_per_event: dict[str, float] = field(default_factory=dict)
    #: `http-batch`: seconds `upstream db rebuild` took to derive the same store again.
    rebuild_seconds: float | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds

    @property
    def ceiling_rate(self) -> float:
        return self.events / self.ceiling_seconds

    @property
    def ratio(self) -> float:
        """Fraction of the ceiling's speed: 1.0 would be as fast as storing the raw payloads
        alone by bare COPY/executemany."""
        return self.rate / self.ceiling_rate

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "db": self.db,
            "events": self.events,
            "seconds": self.seconds,
            "events_per_s": self.rate,
            "ceiling_seconds": self.ceiling_seconds,
            "ceiling_events_per_s": self.ceiling_rate,
            "ratio_to_ceiling": self.ratio,
            "detail": self.detail,
            "cpu_seconds": self.cpu_seconds,
            "cpu_ms_per_event": 1000 * self.cpu_seconds / self.events,
            "exactness": self.exactness,
            "event_bytes": self.event_bytes,
            "load": self.load,
            "lock_wait_s": self.lock_wait_seconds,
            "latency_ms": self.latency_ms,
            "bytes_per_event": self.bytes_per_event,
            "rebuild_events_per_s": None
            if self.rebuild_seconds is None
            else self.events / self.rebuild_seconds,
            "rebuild_ratio_to_ceiling": None
            if self.rebuild_seconds is None
            else self.ceiling_seconds / self.rebuild_seconds,
        }


def cli_has_ingest() -> bool:
    """Whether this checkout's `upstream` command has the `ingest` subcommand yet."""
    probe = subprocess.run(
        [sys.executable, "-m", "upstream", "ingest", "--help"], capture_output=True, check=False
    )
    return probe.returncode == 0


def run_ingest(
    mode: str,
    kind: str,
    data_dir: Path,
    work_dir: Path,
    *,
    batch: int = 500,
    concurrency: int = 8,
    batch_connections: int = 8,
    workers: int = 2,
    processes: int = 1,
    consumers: int = 1,
    limit: int | None = None,
    verify: bool = True,
    after: Callable[[str], None] | None = None,
) -> IngestResult:
    """Ingest the workload in `data_dir` by `mode` into a fresh `kind` database; `after` is
    then called with the database URL, before the database is dropped."""
    summary = load_summary(data_dir)
    events = summary["events"] if limit is None else min(limit, summary["events"])

    def lines() -> Iterator[str]:
        return itertools.islice(read_events(data_dir), events)

    label = f"{data_dir.name}_{mode}_{kind}".replace("-", "_")
    serving = (
        f"{workers} workers" if processes == 1 else f"{processes} servers of {workers} worker(s)"
    )
    latencies: list[float] = []
    with fresh_database(kind, label, work_dir) as url, LockWaits(url) as waits:
        database = _DatabaseCpu(url)
        if mode == "http-batch":
            batches = _batches(lines(), batch)
            seconds, cpu = _http(
                url, work_dir, batches, batch_connections, (workers, processes), database
            )
            detail = f"batches of {batch}, {batch_connections} connections, {serving}"
        elif mode == "http-single":
            requests = (post_request("/api/v1/lineage", line.encode()) for line in lines())
            seconds, cpu = _http(
                url, work_dir, requests, concurrency, (workers, processes), database
            )
            detail = f"{concurrency} connections, {serving}"
        elif mode == "http-paced":
            requests = (post_request("/api/v1/lineage", line.encode()) for line in lines())
            pacing = (PACED_CONNECTIONS, PACED_RATE, latencies)
            seconds, cpu = _http(url, work_dir, requests, 0, (workers, processes), database, pacing)
            detail = (
                f"{PACED_RATE:.0f} events/s offered, {PACED_CONNECTIONS} connections, {serving}"
            )
        elif mode == "kafka":
            db_before = database.snapshot()
            seconds, cpu, detail = consume_seconds(
                url, lines(), events, consumers, batch, work_dir, lambda: database.used(db_before)
            )
        elif mode == "cli":
            seconds, cpu, detail = _cli(url, data_dir, lines(), batch, limit is None, database)
        else:
            raise ValueError(f"unknown ingest mode {mode!r} (expected one of {MODES})")
        load = [round(x, 2) for x in os.getloadavg()]
        ceiling = ceiling_seconds(url, lines())
        result = IngestResult(mode, kind, events, seconds, ceiling, detail, cpu)
        result.event_bytes, result.load = summary["event_bytes"], load
        result.lock_wait_seconds = waits.seconds
        if latencies:
            ordered = sorted(latencies)
            result.latency_ms = {
                f"p{q}": 1000 * ordered[min(len(ordered) - 1, len(ordered) * q // 100)]
                for q in (50, 99)
            }
        stored = stored_bytes(url)
        result.bytes_per_event = {name: size / events for name, size in stored.items()}
        if verify and limit is None:
            store = Store(url)
            try:
                result.exactness = [s.as_dict() for s in check(store, load_truth(data_dir))]
            finally:
                store.dispose()
        if after is not None:
            after(url)
        if mode == "http-batch" and limit is None:
            result.rebuild_seconds = rebuild_seconds(url)
    return result


def _batches(lines: Iterable[str], size: int) -> Iterator[bytes]:
    for chunk in in_chunks(lines, size):
        yield post_request("/api/v1/lineage", ("[" + ",".join(chunk) + "]").encode())


class _DatabaseCpu:
    """CPU used by the PostgreSQL backends serving one database (0 for SQLite, whose work
    happens inside the Upstream process and is counted there)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def pids(self) -> set[int]:
        store = Store(self.url)
        try:
            if store.dialect != "postgresql":
                return set()
            with store.engine.connect() as conn:
                rows = conn.exec_driver_sql(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                )
                return {int(row[0]) for row in rows}
        finally:
            store.dispose()

    def used(self, before: dict[int, float]) -> float:
        """CPU since `before` (a `snapshot`) of the backends alive now."""
        now = self.snapshot()
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in now.items())

    def snapshot(self) -> dict[int, float]:
        return {pid: cpu_seconds({pid}) for pid in self.pids()}


def _http(
    url: str,
    work_dir: Path,
    requests: Iterable[bytes],
    concurrency: int,
    serving: tuple[int, int],
    database: _DatabaseCpu,
    pacing: tuple[int, float, list[float]] | None = None,
) -> tuple[float, float]:
    """Seconds and CPU seconds to send `requests`; with `pacing` (connections, rate and a
    list that gets each request's latency), at that rate instead of as fast as answered."""
    workers, processes = serving
    with Server(url, work_dir, workers, processes=processes) as server:
        root = server.pids
        before, db_before = cpu_seconds(root), database.snapshot()
        started = time.perf_counter()
        if pacing is None:
            send_all(server.ports, requests, concurrency)
        else:
            connections, rate, latencies = pacing
            latencies.extend(send_paced(server.ports, requests, connections, rate))
        elapsed = time.perf_counter() - started
        return elapsed, cpu_seconds(root) - before + database.used(db_before)


def _cli(
    url: str,
    data_dir: Path,
    lines: Iterable[str],
    batch: int,
    whole: bool,
    database: _DatabaseCpu,
) -> tuple[float, float, str]:
    db_before = database.snapshot()
    if whole and cli_has_ingest():
        command = [sys.executable, "-m", "upstream", "ingest", "--db", url, "--batch-size"]
        command.append(str(batch))
        command.append(str(data_dir / "events.ndjson"))
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        log = data_dir / "ingest-cli.log"
        with log.open("wb") as errors:
            started = time.perf_counter()
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
            peak_db = 0.0
            while process.poll() is None:  # backends end with the process: sample as it runs
                peak_db = max(peak_db, database.used(db_before))
                time.sleep(0.5)
            elapsed = time.perf_counter() - started
        if process.returncode != 0:
            raise RuntimeError(f"upstream ingest failed; see {log}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        return elapsed, cpu + peak_db, "upstream ingest (whole process, start-up included)"
    store = Store(url)
    try:
        own = time.process_time()
        started = time.perf_counter()
        for chunk in in_chunks(lines, batch):
            ingest_documents(store, [json.loads(line) for line in chunk], batch=True)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - own + database.used(db_before)
        return elapsed, cpu, f"in-process ingest_documents, batches of {batch}"
    finally:
        store.dispose()
