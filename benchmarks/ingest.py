"""Ingest throughput: the workload's events into a fresh database, by one path at a time.

- `http-batch`: JSON arrays of `batch` events posted to a live `upstream serve`.
- `http-single`: one event per POST, `concurrency` keep-alive connections at once.
- `cli`: `upstream ingest --db URL events.ndjson` when the command exists, else the same
  in-process path it wraps (`ingest_documents` over batches), reported as `in-process`.

Every run is followed, on the same database, by the ceiling (the same rows by COPY or bare
executemany) and by the exactness check against the ground truth.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.ceiling import ceiling_seconds
from benchmarks.databases import fresh_database
from benchmarks.exactness import check
from benchmarks.generator import load_truth, read_events
from benchmarks.server import Server, post_request, send_all
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store

MODES = ("http-batch", "http-single", "cli")


@dataclass
class IngestResult:
    mode: str
    db: str
    events: int
    seconds: float
    ceiling_seconds: float
    detail: str = ""
    exactness: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.events / self.seconds

    @property
    def ceiling_rate(self) -> float:
        return self.events / self.ceiling_seconds

    @property
    def ratio(self) -> float:
        """Fraction of the ceiling's speed: 1.0 would be as fast as bare COPY/executemany."""
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
            "exactness": self.exactness,
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
    workers: int = 2,
    limit: int | None = None,
    verify: bool = True,
    after: Callable[[str], None] | None = None,
) -> IngestResult:
    """Ingest the workload in `data_dir` by `mode` into a fresh `kind` database; `after` is
    then called with the database URL, before the database is dropped."""
    lines = list(read_events(data_dir))
    if limit is not None:
        lines = lines[:limit]
    label = f"{data_dir.name}_{mode}_{kind}".replace("-", "_")
    with fresh_database(kind, label, work_dir) as url:
        if mode == "http-batch":
            seconds = _http(url, work_dir, _batches(lines, batch), 2, workers)
            detail = f"batches of {batch}, 2 connections, {workers} workers"
        elif mode == "http-single":
            requests = [post_request("/api/v1/lineage", line.encode()) for line in lines]
            seconds = _http(url, work_dir, requests, concurrency, workers)
            detail = f"{concurrency} connections, {workers} workers"
        elif mode == "cli":
            seconds, detail = _cli(url, data_dir, lines, batch, limit is None)
        else:
            raise ValueError(f"unknown ingest mode {mode!r} (expected one of {MODES})")
        ceiling = ceiling_seconds(url)
        result = IngestResult(mode, kind, len(lines), seconds, ceiling, detail)
        if verify and limit is None:
            store = Store(url)
            try:
                result.exactness = [s.as_dict() for s in check(store, load_truth(data_dir))]
            finally:
                store.dispose()
        if after is not None:
            after(url)
    return result


def _batches(lines: list[str], size: int) -> list[bytes]:
    return [
        post_request("/api/v1/lineage", ("[" + ",".join(lines[i : i + size]) + "]").encode())
        for i in range(0, len(lines), size)
    ]


def _http(url: str, work_dir: Path, requests: list[bytes], concurrency: int, workers: int) -> float:
    with Server(url, work_dir, workers) as server:
        started = time.perf_counter()
        send_all(server.port, requests, concurrency)
        return time.perf_counter() - started


def _cli(url: str, data_dir: Path, lines: list[str], batch: int, whole: bool) -> tuple[float, str]:
    if whole and cli_has_ingest():
        command = [sys.executable, "-m", "upstream", "ingest", "--db", url, "--batch-size"]
        command.append(str(batch))
        command.append(str(data_dir / "events.ndjson"))
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        return time.perf_counter() - started, "upstream ingest (whole process, start-up included)"
    store = Store(url)
    try:
        started = time.perf_counter()
        for i in range(0, len(lines), batch):
            documents = [json.loads(line) for line in lines[i : i + batch]]
            ingest_documents(store, documents, batch=True)
        return time.perf_counter() - started, f"in-process ingest_documents, batches of {batch}"
    finally:
        store.dispose()
