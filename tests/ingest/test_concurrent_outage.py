"""Posters whose events overlap — the same runs (START from one client, COMPLETE from
another, some as one two-event batch), jobs, datasets and parent runs — never get a 500: not
with the database up, and not while PostgreSQL shuts down (`-m fast`, `-m immediate`) and
comes back, when they get 503s with `Retry-After` and every event acknowledged is stored.

The shutdowns happen to a PostgreSQL cluster of the test's own (tests/private_postgres.py),
never to the shared server. Each poster re-sends what got a 503, as a client should, so at
the end every event is stored exactly once.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.builders import BASE_TIME, ds, run_event
from tests.conftest import LiveServer, truncate_tables
from tests.private_postgres import PrivateCluster, private_cluster
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

POSTERS = 3
RUNS = 150
#: Seconds between a poster's posts, so the posters are still at work during the outages.
PACE = 0.05
#: Small timeouts, so an outage is noticed quickly.
TIMEOUTS = {
    "UPSTREAM_DB_CONNECT_TIMEOUT": "2",
    "UPSTREAM_DB_POOL_TIMEOUT": "1",
    "UPSTREAM_DB_STATEMENT_TIMEOUT": "3",
    "UPSTREAM_DB_LOCK_TIMEOUT": "2",
}


def overlapping_posts(seed: int) -> list[list[list[dict[str, Any]]]]:
    """Each poster's posts (each a list of events: one, or a run's START and COMPLETE as a
    batch). Every run's START and COMPLETE go to different posters, or to one poster as one
    batch; all runs share 4 jobs, 6 datasets and 3 parent runs."""
    rng = random.Random(seed)
    parents = [str(uuid.uuid4()) for _ in range(3)]
    posts: list[list[list[dict[str, Any]]]] = [[] for _ in range(POSTERS)]
    for i in range(RUNS):
        run_id = str(uuid.uuid4())

        def event(kind: str, *, i: int = i, run_id: str = run_id) -> dict[str, Any]:
            return run_event(
                ("overlap", f"job-{i % 4}"),
                run_id=run_id,
                event_type=kind,
                time=BASE_TIME + timedelta(minutes=i, seconds=kind == "COMPLETE"),
                inputs=[ds("overlap", f"table-{i % 6}")],
                outputs=[ds("overlap", f"table-{(i * 5 + 1) % 6}")],
                parent=(("overlap", "nightly"), parents[i % 3]),
            )

        if i % 4 == 0:
            posts[i % POSTERS].append([event("START"), event("COMPLETE")])
        else:
            posts[i % POSTERS].append([event("START")])
            posts[(i + 1) % POSTERS].append([event("COMPLETE")])
    for own in posts:
        rng.shuffle(own)
    return posts


class Posters:
    """Threads that post their events, re-sending each post answered 503 until it is
    stored; they note every status and every 503 without `Retry-After`."""

    def __init__(self, url: str, posts: list[list[list[dict[str, Any]]]]) -> None:
        self.url = url
        self.posts = posts
        self.statuses: Counter[int] = Counter()
        self.problems: list[str] = []
        self.stored_runs: set[str] = set()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._post, args=(p,)) for p in posts]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(240)
        assert not any(thread.is_alive() for thread in self._threads), "a poster hung"

    def _post(self, posts: list[list[dict[str, Any]]]) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            for events in posts:
                body: Any = events if len(events) > 1 else events[0]
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    response = http.post("/api/v1/lineage", json=body)
                    with self._lock:
                        self.statuses[response.status_code] += 1
                        if response.status_code == 201:
                            self.stored_runs.update(e["run"]["runId"] for e in events)
                            break
                        if response.status_code != 503:
                            self.problems.append(f"{response.status_code} {response.text[:200]}")
                            break
                        if response.headers.get("retry-after") != "5":
                            self.problems.append(f"503 without Retry-After: {response.headers}")
                    time.sleep(0.3)
                else:
                    self.problems.append("a post was never stored within 120 s")
                time.sleep(PACE)


def stored_events(url: str) -> Counter[str]:
    store = Store(url)
    try:
        with store.read() as conn:
            return Counter(
                f"{row.run_id} {row.event_kind}"
                for row in conn.execute(sa.select(t.events.c.run_id, t.events.c.event_kind))
            )
    finally:
        store.dispose()


def expected_events(posts: list[list[list[dict[str, Any]]]]) -> Counter[str]:
    return Counter(
        f"{e['run']['runId']} {e['eventType']}" for own in posts for events in own for e in events
    )


def run_posters(server: LiveServer, posts: Any, during: Callable[[Posters], None]) -> Posters:
    """Run the posters to their end, calling `during` while they post."""
    posters = Posters(server.url, posts)
    posters.start()
    try:
        during(posters)
    finally:
        posters.join()
    return posters


@pytest.mark.slow
def test_overlapping_posters_never_get_a_500(db_url: str, tmp_path: Path) -> None:
    posts = overlapping_posts(seed=34)
    server = LiveServer(db_url, tmp_path).start()
    try:
        posters = run_posters(server, posts, lambda _: None)
    finally:
        server.stop()
    assert posters.problems == []
    assert set(posters.statuses) == {201}
    assert stored_events(db_url) == expected_events(posts)
    assert "Traceback" not in server.log()


def _shut_down_twice(cluster: PrivateCluster, mode: str) -> Callable[[Posters], None]:
    """Stop the cluster and start it again, twice, each time once more runs were stored."""

    def during(posters: Posters) -> None:
        for stored in (10, 40):
            while len(posters.stored_runs) < stored:
                time.sleep(0.05)
            cluster.stop(mode)
            time.sleep(1.5)
            cluster.start()

    return during


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_posters_through_a_postgresql_shutdown_get_503s_never_500s(
    mode: str, tmp_path: Path
) -> None:
    posts = overlapping_posts(seed=33)
    with private_cluster() as cluster:
        store = Store(cluster.url)
        upgrade(store)
        store.dispose()
        truncate_tables(cluster.url)
        server = LiveServer(cluster.url, tmp_path, env=TIMEOUTS).start()
        try:
            posters = run_posters(server, posts, _shut_down_twice(cluster, mode))
        finally:
            server.stop()
        assert posters.problems == []
        assert set(posters.statuses) == {201, 503}  # the outages came while they posted
        assert stored_events(cluster.url) == expected_events(posts)
        log = server.log()
        assert "PendingRollbackError" not in log
        assert "unhandled error" not in log
