"""A PostgreSQL server that hangs — every process of it stopped with SIGSTOP, so connections
stay open and nothing answers — gets every request a 503 with `Retry-After` within the
statement timeout + 2 s: 32 posts at once (batches of 500 events and single events), reads
and `/ready`. After SIGCONT the server recovers without a restart, and every event that was
acknowledged (201) is stored.

The cluster is the test's own (tests/private_postgres.py): the shared server is never
stopped. The statement timeout bounds a request's database work as a whole: waiting for a
pooled connection, checking it, opening a new one, waiting in the group commit's queue and
every statement (`upstream.store.deadlines.OperationClock`).
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from tests.private_postgres import private_cluster
from tests.readback import stored_run_ids
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

STATEMENT_TIMEOUT = 3
TIMEOUTS = {
    "UPSTREAM_DB_CONNECT_TIMEOUT": "2",
    "UPSTREAM_DB_POOL_TIMEOUT": "2",
    "UPSTREAM_DB_STATEMENT_TIMEOUT": str(STATEMENT_TIMEOUT),
    "UPSTREAM_DB_LOCK_TIMEOUT": "2",
}
#: What the issue asks: every answer within the database timeout + 2 s.
ANSWER_BOUND = STATEMENT_TIMEOUT + 2
BATCHES = 4
JSON = {"Content-Type": "application/json"}
SINGLES = 28


def _event(tag: str) -> dict[str, Any]:
    return run_event(("hung", tag), run_id=str(uuid.uuid4()), outputs=[ds("hung", tag)])


def _json(document: Any) -> bytes:
    return json.dumps(document).encode()


def _timed(request: tuple[str, str, bytes | None]) -> tuple[str, int, float, str | None]:
    """(what, status, seconds, Retry-After) of one request on a connection of its own; a
    body is JSON written before the clock starts."""
    what, path, body = request
    with httpx.Client(timeout=60) as http:
        started = time.monotonic()
        post = body is not None
        response = http.post(path, content=body, headers=JSON) if post else http.get(path)
        seconds = time.monotonic() - started
    return what, response.status_code, seconds, response.headers.get("retry-after")


@pytest.mark.slow
@pytest.mark.postgres
def test_a_hung_postgresql_answers_every_request_503_in_time(tmp_path: Path) -> None:
    with private_cluster() as cluster:
        store = Store(cluster.url)
        upgrade(store)
        store.dispose()
        server = LiveServer(cluster.url, tmp_path, env=TIMEOUTS).start()
        acknowledged: list[str] = []
        try:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                for i in range(3):
                    event = _event(f"before-{i}")
                    assert http.post("/api/v1/lineage", json=event).status_code == 201
                    acknowledged.append(event["run"]["runId"])
                assert http.get("/api/v1/namespaces/hung/datasets").status_code == 200
            base = server.url
            posts: list[tuple[str, str, bytes | None]] = [
                (
                    "batch",
                    f"{base}/api/v1/lineage",
                    _json([_event(f"b{i}-{j}") for j in range(500)]),
                )
                for i in range(BATCHES)
            ]
            posts += [
                ("single", f"{base}/api/v1/lineage", _json(_event(f"s{i}"))) for i in range(SINGLES)
            ]
            reads = [("read", f"{base}/api/v1/namespaces/hung/datasets", None)] * 6
            reads += [("ready", f"{base}/ready", None)] * 3
            cluster.hang()
            try:
                with ThreadPoolExecutor(len(posts) + len(reads)) as pool:
                    answers = list(pool.map(_timed, posts + reads))
                # And once the outage is known.
                again = [_timed(request) for request in (posts[-1], reads[0], reads[-1])]
            finally:
                cluster.thaw()
            late = [a for a in answers + again if a[1] != 503 or a[2] >= ANSWER_BOUND]
            assert late == [], sorted(answers + again, key=lambda a: -a[2])
            assert {a[3] for a in answers + again} == {"5"}
            with httpx.Client(base_url=server.url, timeout=60) as http:
                after = _event("after")
                deadline = time.monotonic() + 60
                while (status := http.post("/api/v1/lineage", json=after).status_code) != 201:
                    assert status == 503
                    assert time.monotonic() < deadline, "no recovery within 60 s of SIGCONT"
                    time.sleep(0.5)
                acknowledged.append(after["run"]["runId"])
                assert http.get("/ready").status_code == 200
        finally:
            server.stop()
        assert set(acknowledged) <= stored_run_ids(cluster.url)
        assert "PendingRollbackError" not in server.log()
