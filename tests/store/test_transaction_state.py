"""What a write keeps for the rest of its transaction (`upstream.store.transaction_state`):
made once per transaction, never seen by the next transaction on the same connection,
whether the one before committed or rolled back; what it leaves for after its commit runs
once it committed, never after a rollback."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from upstream.store.change_log import ENTITIES, record
from upstream.store.engine import Store
from upstream.store.transaction_state import after_commit, kept, kept_if_any, taken

KEY = "tests.transaction_state"


def test_kept_once_per_transaction_and_never_by_the_next(store: Store) -> None:
    with store.engine.connect() as conn:
        with conn.begin():
            assert kept_if_any(conn, KEY) is None
            first = kept(conn, KEY, list)
            first.append("a")
            assert kept(conn, KEY, list) is first
            assert kept_if_any(conn, KEY) == ["a"]
        with conn.begin():  # the same connection, the next transaction
            assert kept_if_any(conn, KEY) is None
            kept(conn, KEY, list).append("b")
            conn.rollback()
        with conn.begin():  # after a rollback too
            assert kept(conn, KEY, list) == []


def test_taken_is_kept_no_more(store: Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        kept(conn, KEY, dict)["x"] = 1
        assert taken(conn, KEY) == {"x": 1}
        assert taken(conn, KEY) is None
        assert kept_if_any(conn, KEY) is None


def test_nothing_is_kept_outside_a_transaction(store: Store) -> None:
    with (
        store.engine.connect() as conn,
        pytest.raises(RuntimeError, match="inside a transaction"),
    ):
        kept(conn, KEY, list)


def test_what_a_write_leaves_for_after_its_commit_runs_once_it_committed(store: Store) -> None:
    """The action sees what the write committed (the position it appended, from another
    connection), runs once, the last under its key; a write that fails runs none, and the
    next transaction on the same pooled connection does not inherit it."""
    seen: list[tuple[str, int]] = []

    def work(conn: Any) -> None:
        record(conn, ENTITIES, {uuid.UUID(int=1)})
        after_commit(conn, KEY, lambda _store: seen.append(("replaced", 0)))
        after_commit(conn, KEY, lambda done: seen.append(("last", done.read_position())))
        assert seen == []

    _, at = store.write_at(work)
    assert seen == [("last", at)]

    def fails(conn: Any) -> None:
        after_commit(conn, KEY, lambda _store: seen.append(("failed", 0)))
        raise RuntimeError("the write fails")

    with pytest.raises(RuntimeError):
        store.write(fails)
    store.write(lambda conn: None)
    assert seen == [("last", at)]


def test_settle_waits_for_the_work_started_in_the_background(store: Store) -> None:
    release, done = threading.Event(), threading.Event()

    def work() -> None:
        release.wait(10)
        done.set()

    store.in_background(work, "tests-background")
    assert not done.is_set()
    release.set()
    store.settle()
    assert done.is_set()
