"""Graceful shutdown: a request in flight when SIGTERM arrives is still answered and stored."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from upstream.store import schema
from upstream.store.engine import Store

BATCH = 1_000


@pytest.mark.slow
def test_request_in_flight_at_sigterm_completes(live_server: LiveServer, db_url: str) -> None:
    events = [
        run_event(
            ("shutdown", f"job-{i}"),
            inputs=[ds("shutdown", f"in-{i}")],
            outputs=[ds("shutdown", f"out-{i}")],
        )
        for i in range(BATCH)
    ]
    body = json.dumps(events).encode()
    half = len(body) // 2
    headers_sent = threading.Event()
    terminated = threading.Event()

    def slow_body() -> Iterator[bytes]:
        # The server has the request line and the first half when SIGTERM is sent; the rest
        # follows only after it, so the request is certainly in flight during the shutdown.
        yield body[:half]
        headers_sent.set()
        assert terminated.wait(30)
        yield body[half:]

    answer: dict[str, httpx.Response] = {}

    def post() -> None:
        answer["response"] = httpx.post(
            f"{live_server.url}/api/v1/lineage",
            content=slow_body(),
            headers={"content-type": "application/json"},
            timeout=60,
        )

    poster = threading.Thread(target=post)
    poster.start()
    assert headers_sent.wait(30)
    # Give the server a moment to read what was sent, so it has a request (not an idle
    # connection, which a shutdown may close) when the signal arrives.
    time.sleep(0.5)
    assert live_server.process is not None
    live_server.process.send_signal(signal.SIGTERM)
    terminated.set()
    poster.join(60)
    assert answer["response"].status_code == 201
    # It stopped after answering; uvicorn re-raises the SIGTERM it handled on the way out.
    assert live_server.process.wait(30) in (0, -signal.SIGTERM)
    assert "Finished server process" in live_server.log()
    store = Store(db_url)
    try:
        with store.read() as conn:
            stored = conn.execute(sa.select(sa.func.count()).select_from(schema.events)).scalar()
            jobs = conn.execute(sa.select(sa.func.count()).select_from(schema.jobs)).scalar()
    finally:
        store.dispose()
    assert stored == BATCH
    assert jobs == BATCH
