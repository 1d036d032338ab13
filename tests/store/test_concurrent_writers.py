"""Concurrent writers wait their turn, they do not fail (PostgreSQL).

Batches naming the same jobs and datasets used to queue on each other's row locks for whole
batches, until the lock timeout answered 503. A write now takes the rows batches share in one
short step at its end (`upstream.store.writer.write_shared_rows`). Here one writer holds its
transaction open just before that step for four times the lock timeout, with its runs' rows
written, while 16 others post batches naming the same new jobs, datasets and lineage: every
one of them is answered 201, the held writer commits after them, and everything is stored.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.builders import column_lineage, ds, run_event, schema_facet
from tests.conftest import LiveServer, truncate_tables
from tests.readback import stored_run_ids
from upstream.ingest.recipe import apply_recipe
from upstream.ingest.service import prepare
from upstream.store import schema as t
from upstream.store import writer
from upstream.store.engine import Store, Timeouts

LOCK_TIMEOUT = 1.0
HELD = 4 * LOCK_TIMEOUT
WRITERS = 16
NS = "contended"
JOBS = 4


def _batch() -> list[dict[str, Any]]:
    """A START and a COMPLETE of a new run of each job: job k reads t{k} and writes t{k+1},
    column for column, so every batch names the same jobs, datasets and lineage sets."""
    events: list[dict[str, Any]] = []
    for k in range(JOBS):
        run_id = str(uuid.uuid4())
        source, target = f"t{k}", f"t{k + 1}"
        fields = schema_facet(("id", "INT"), ("amount", "DECIMAL"))
        lineage = column_lineage({f: [(NS, source, f)] for f in ("id", "amount")})
        for event_type in ("START", "COMPLETE"):
            events.append(
                run_event(
                    (NS, f"job{k}"),
                    run_id=run_id,
                    event_type=event_type,
                    inputs=[ds(NS, source, schema=fields)],
                    outputs=[ds(NS, target, schema=fields, columnLineage=lineage)],
                )
            )
    return events


def _run_ids(batch: list[dict[str, Any]]) -> set[str]:
    return {event["run"]["runId"] for event in batch}


def _post(url: str, batch: list[dict[str, Any]]) -> tuple[int, str]:
    with httpx.Client(timeout=120) as http:
        response = http.post(f"{url}/api/v1/lineage", json=batch)
    return response.status_code, response.text


class HeldWriter:
    """A write in this process that stops before its shared step until `release()`."""

    def __init__(self, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = Store(url, timeouts=Timeouts(lock=LOCK_TIMEOUT))
        self.batch = _batch()
        self.reached = threading.Event()
        self._release = threading.Event()
        self.held_for = 0.0
        self.error: BaseException | None = None
        shared: Callable[..., None] = writer.write_shared_rows
        holder = threading.current_thread

        def held(*args: Any) -> None:
            if holder() is self._thread and not self.reached.is_set():
                started = time.monotonic()
                self.reached.set()
                self._release.wait(120)
                self.held_for = time.monotonic() - started
            shared(*args)

        monkeypatch.setattr(writer, "write_shared_rows", held)
        self._thread = threading.Thread(target=self._write)

    def _write(self) -> None:
        facts = prepare(self.batch, batch=True)
        try:
            self.store.write(lambda conn: apply_recipe(conn, facts, datetime.now(UTC)))
        except BaseException as exc:  # reported by the test
            self.error = exc

    def start(self) -> None:
        self._thread.start()
        assert self.reached.wait(120), "the held writer never reached its shared step"

    def release(self) -> None:
        self._release.set()
        self._thread.join(120)
        self.store.dispose()


@pytest.mark.slow
@pytest.mark.postgres
def test_writers_naming_the_same_rows_are_not_failed_by_one_held_open(
    postgres_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    truncate_tables(postgres_server)
    env = {"UPSTREAM_DB_LOCK_TIMEOUT": str(LOCK_TIMEOUT)}
    held = HeldWriter(postgres_server, monkeypatch)
    batches = [_batch() for _ in range(WRITERS)]
    server = LiveServer(postgres_server, tmp_path, env=env).start("--workers", "2")
    try:
        held.start()
        started = time.monotonic()
        with ThreadPoolExecutor(WRITERS) as pool:
            answers = list(pool.map(lambda batch: _post(server.url, batch), batches))
        time.sleep(max(0.0, HELD - (time.monotonic() - started)))
    finally:
        held.release()
        server.stop()
    assert [status for status, _ in answers] == [201] * WRITERS, answers
    assert held.error is None
    assert held.held_for >= HELD
    expected = set().union(*map(_run_ids, [*batches, held.batch]))
    assert expected <= {str(run) for run in stored_run_ids(postgres_server)}
    engine = sa.create_engine(postgres_server)
    with engine.connect() as conn:
        jobs = conn.execute(sa.select(sa.func.count()).select_from(t.jobs)).scalar_one()
        datasets = conn.execute(sa.select(sa.func.count()).select_from(t.datasets)).scalar_one()
        sets = conn.execute(sa.select(sa.func.count()).select_from(t.lineage_sets)).scalar_one()
    engine.dispose()
    # job0..job3; t0..t4; one set per job (its output's columns from its input's).
    assert (jobs, datasets, sets) == (JOBS, JOBS + 1, JOBS)
