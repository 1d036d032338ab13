"""Many writers at once (design §5): 8 concurrent clients x 500 events, 10% of them posted
twice, against a live server with 2 worker processes. Exactly the distinct events are stored,
nothing answers 5xx, nothing deadlocks, and readers polling during the writes — the store
directly, and the lineage API — never see an event half-stored.

Writers post one event at a time or small arrays (1 to 8 events, as batching producers do), so
a duplicate may race its twin in another request or sit beside it in the same array, and the
test stays within its time budget on two cores."""

from __future__ import annotations

import random
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.builders import BASE_TIME, ds, run_event
from tests.conftest import LiveServer
from upstream.store import schema as t
from upstream.store.engine import Store

WRITERS = 8
#: Every dataset is within 10 levels of table-0, so this answer holds every stored run.
LINEAGE = "/v3/namespaces/concurrency/datasets/table-0/lineage?start=0&end=now%2B3650d&levels=10"
PER_WRITER = 500
DUPLICATE_SHARE = 0.10


def workload() -> tuple[list[list[dict[str, Any]]], int]:
    """Each writer's posts and the number of distinct events among them. Events share a few
    jobs and datasets, so concurrent transactions contend for the same rows; every event is
    a run that reads one dataset and writes another."""
    total = WRITERS * PER_WRITER
    distinct_count = round(total * (1 - DUPLICATE_SHARE))
    distinct = [
        run_event(
            ("concurrency", f"job-{i % 12}"),
            time=BASE_TIME + timedelta(seconds=i),
            inputs=[ds("concurrency", f"table-{i % 30}")],
            outputs=[ds("concurrency", f"table-{(i * 7 + 3) % 30}")],
        )
        for i in range(distinct_count)
    ]
    rng = random.Random(8)
    posts = distinct + rng.sample(distinct, total - distinct_count)
    rng.shuffle(posts)
    return [posts[w::WRITERS] for w in range(WRITERS)], distinct_count


def snapshot(store: Store) -> tuple[int, int, int]:
    """(events, runs, relations), all read in one statement, so from one snapshot."""
    count = sa.select(sa.func.count())
    query = sa.select(
        count.select_from(t.events).scalar_subquery(),
        count.select_from(t.runs).scalar_subquery(),
        count.select_from(t.relations).scalar_subquery(),
    )
    with store.read() as conn:
        events, runs, relations = conn.execute(query).one()
    return events, runs, relations


@pytest.mark.slow
def test_concurrent_writers_store_exactly_the_distinct_events(
    db_url: str, tmp_path: Path, store: Store
) -> None:
    batches, distinct = workload()
    assert sum(len(b) for b in batches) == WRITERS * PER_WRITER
    server = LiveServer(db_url, tmp_path).start("--workers", "2")
    statuses: Counter[int] = Counter()
    errors: list[str] = []
    torn: list[tuple[int, int, int]] = []
    api_torn: list[str] = []
    api_runs: list[int] = []
    seen: list[tuple[int, int, int]] = []
    done = threading.Event()

    def write(events: list[dict[str, Any]], seed: int) -> None:
        sizes = random.Random(seed)
        with httpx.Client(base_url=server.url, timeout=60) as http:
            start = 0
            while start < len(events):
                size = sizes.randint(1, 8)
                posted = events[start : start + size]
                body = posted[0] if size == 1 else posted
                start += size
                try:
                    response = http.post("/api/v1/lineage", json=body)
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                    continue
                statuses[response.status_code] += len(posted)
                if response.status_code != 201:
                    errors.append(response.text[:300])

    def read() -> None:
        while not done.is_set():
            events, runs, relations = snapshot(store)
            seen.append((events, runs, relations))
            if not (events == runs and relations == 2 * runs):
                torn.append((events, runs, relations))
            done.wait(0.02)

    def read_api() -> None:
        """The same through the server: every run in a lineage answer both read and wrote."""
        with httpx.Client(base_url=server.url, timeout=60) as http:
            while not done.is_set():
                response = http.get(LINEAGE)
                if response.status_code == 404:  # table-0 is not stored yet
                    done.wait(0.05)
                    continue
                if response.status_code != 200:
                    errors.append(f"lineage read: {response.status_code} {response.text[:300]}")
                    return
                accesses: dict[str, set[str]] = {}
                for relation in response.json()["relations"]:
                    for run in relation["runs"]:
                        accesses.setdefault(run, set()).update(relation["accesses"])
                api_runs.append(len(accesses))
                api_torn.extend(r for r, a in accesses.items() if a != {"read", "write"})
                done.wait(0.5)

    writers = [threading.Thread(target=write, args=(b, i)) for i, b in enumerate(batches)]
    readers = [threading.Thread(target=read), threading.Thread(target=read_api)]
    try:
        for reader in readers:
            reader.start()
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join(120)
        assert not any(thread.is_alive() for thread in writers), "writers hung: a deadlock?"
    finally:
        done.set()
        for reader in readers:
            reader.join(30)
        server.stop()

    assert errors == []
    assert statuses == {201: WRITERS * PER_WRITER}
    assert torn == []
    assert api_torn == []
    assert any(0 < runs < distinct for runs in api_runs), "no API read during the writes"
    assert any(0 < runs < distinct for _, runs, _ in seen), "the reader saw no write in progress"
    assert snapshot(store) == (distinct, distinct, 2 * distinct)
    with store.read() as conn:
        per_run = conn.execute(
            sa.select(t.relations.c.run_id, sa.func.count()).group_by(t.relations.c.run_id)
        ).all()
        jobs = conn.execute(sa.select(sa.func.count()).select_from(t.jobs)).scalar_one()
        datasets = conn.execute(sa.select(sa.func.count()).select_from(t.datasets)).scalar_one()
    assert len(per_run) == distinct
    assert {count for _, count in per_run} == {2}
    assert (jobs, datasets) == (12, 30)
    assert "Traceback" not in server.log()
