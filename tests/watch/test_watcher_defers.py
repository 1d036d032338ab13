"""The watcher lets a write of its process finish before a round, on both stores: a round
waits while a write is under way — from when its events arrive, over HTTP or Kafka — and at
most `watch_defer_seconds`, so notifications stay prompt under continuous ingest."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection

from tests.conftest import post
from tests.watch.test_notifications import app, job_run
from upstream.api.routes import openlineage
from upstream.ingest.body import Limits
from upstream.kafka import messages
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.watch.background import Watcher

__all__ = ["app"]


class Rounds:
    """Stands for the dispatcher: records when each round began; each takes `lasting`
    seconds."""

    def __init__(self, lasting: float = 0) -> None:
        self.began: list[float] = []
        self.lasting = lasting

    def dispatch_once(self, now: datetime | None = None) -> int:
        self.began.append(time.monotonic())
        time.sleep(self.lasting)
        return 0


@pytest.fixture
def held_write(store: Store) -> Iterator[threading.Event]:
    """A write transaction of this process under way until the event is set."""
    release = threading.Event()

    def work(conn: Connection) -> None:
        release.wait(30)

    writer = threading.Thread(target=lambda: store.write(work))
    writer.start()
    deadline = time.monotonic() + 10
    while not store.writing and time.monotonic() < deadline:
        time.sleep(0.005)
    assert store.writing
    yield release
    release.set()
    writer.join(30)


def watching(store: Store, db_url: str, defer: float, lasting: float = 0) -> tuple[Watcher, Rounds]:
    settings = Settings(db_url=db_url, watch_poll_seconds=0.02, watch_defer_seconds=defer)
    watcher = Watcher(store, settings)
    rounds = Rounds(lasting)
    watcher.dispatcher = rounds  # type: ignore[assignment]
    return watcher, rounds


def test_a_round_waits_for_the_write_under_way(
    store: Store, db_url: str, held_write: threading.Event
) -> None:
    watcher, rounds = watching(store, db_url, defer=30)
    watcher.start()
    try:
        time.sleep(0.5)
        assert rounds.began == []
        released = time.monotonic()
        held_write.set()
        deadline = time.monotonic() + 10
        while not rounds.began and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rounds.began
        assert released <= rounds.began[0] < released + 5  # the bound is 30 s
    finally:
        watcher.stop()


def test_a_round_waits_at_most_the_defer_bound(
    store: Store, db_url: str, held_write: threading.Event
) -> None:
    watcher, rounds = watching(store, db_url, defer=0.3)
    started = time.monotonic()
    watcher.start()
    try:
        deadline = started + 10
        while not rounds.began and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rounds.began
        assert started + 0.3 <= rounds.began[0] < started + 5  # the write lasts 30 s
        assert store.writing  # the write is still under way
    finally:
        watcher.stop()


def test_while_writes_go_on_rounds_take_at_most_a_tenth_of_the_time(
    store: Store, db_url: str, held_write: threading.Event
) -> None:
    """Rounds of 0.2 s under a write that never ends: each waits its 0.05 s bound, and
    then until nine times the last round's 0.2 s has passed since it ended."""
    watcher, rounds = watching(store, db_url, defer=0.05, lasting=0.2)
    watcher.start()
    try:
        deadline = time.monotonic() + 20
        while len(rounds.began) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        first, second, third = rounds.began[:3]
        assert second - first >= 0.2 + 9 * 0.2
        assert third - second >= 0.2 + 9 * 0.2
        assert store.writing
    finally:
        watcher.stop()


def test_without_a_write_a_round_does_not_wait(store: Store, db_url: str) -> None:
    watcher, rounds = watching(store, db_url, defer=30)
    started = time.monotonic()
    watcher.start()
    try:
        deadline = started + 10
        while len(rounds.began) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(rounds.began) >= 3
        assert rounds.began[0] < started + 5  # the bound is 30 s
    finally:
        watcher.stop()


def test_posted_events_are_a_write_under_way_while_they_are_prepared(
    app: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Preparing a batch costs more CPU than storing it: a round waits for that too."""
    store: Store = app.app.state.store  # type: ignore[attr-defined]
    writing: list[bool] = []

    def prepare(*args: Any, **kwargs: Any) -> Any:
        writing.append(store.writing)
        return real(*args, **kwargs)

    real = openlineage.prepare
    monkeypatch.setattr(openlineage, "prepare", prepare)
    post(app, job_run("etl", ["raw"], ["orders"]))
    assert writing == [True]
    assert not store.writing


def test_consumed_messages_are_a_write_under_way_while_they_are_decoded(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    writing: list[bool] = []

    def prepare_message(*args: Any) -> Any:
        writing.append(store.writing)
        return real(*args)

    real = messages.prepare_message
    monkeypatch.setattr(messages, "prepare_message", prepare_message)
    value = json.dumps(job_run("etl", ["raw"], ["orders"])).encode()
    [outcome] = messages.ingest_messages(store, [value], Limits(10_000_000, 1_000, 100_000))
    assert outcome.stored == 1
    assert writing == [True]
    assert not store.writing
