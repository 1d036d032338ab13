"""The change log's seam (`upstream.store.change_log`): positions, the changes since one, the
order they become visible in, and trimming — on both stores."""

from __future__ import annotations

import random
import threading
import time
import uuid
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Connection

from upstream.store import change_log
from upstream.store.change_log import (
    DECLARATIONS,
    ENTITIES,
    RELOAD,
    RUNS,
    TAGS,
    Change,
    ChangeLogGap,
    changes_since,
    position,
    record,
    trim,
)
from upstream.store.engine import Store

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))


def _recording(*changes: tuple[str, list[uuid.UUID]]) -> Any:
    def work(conn: Connection) -> None:
        for kind, ids in changes:
            record(conn, kind, ids)

    return work


def _log(store: Store, after: int = 0) -> list[Change]:
    with store.read() as conn:
        return changes_since(conn, after)


def _position(store: Store) -> int:
    with store.read() as conn:
        return position(conn)


def test_an_empty_log_is_at_position_zero(store: Store) -> None:
    assert _position(store) == 0
    assert _log(store) == []


def test_a_transaction_appends_one_change_per_kind_with_its_ids(store: Store) -> None:
    store.write(_recording((ENTITIES, [C]), (RUNS, [B]), (RUNS, [A, B]), (TAGS, [A])))
    store.write(_recording((DECLARATIONS, [A])))

    assert _position(store) == 4
    assert _log(store) == [
        Change(1, RUNS, (A, B)),
        Change(2, ENTITIES, (C,)),
        Change(3, TAGS, (A,)),
        Change(4, DECLARATIONS, (A,)),
    ]
    assert _log(store, 2) == [Change(3, TAGS, (A,)), Change(4, DECLARATIONS, (A,))]
    assert _log(store, 4) == []


def test_postgresql_appends_in_one_statement(statements: tuple[Store, list[str]]) -> None:
    store, sent = statements
    store.write(_recording((ENTITIES, [C]), (RUNS, [B])))
    sent.clear()
    at = store.write_at(_recording((RUNS, [A]), (TAGS, [A]), (DECLARATIONS, [B])))[1]

    assert at == 5  # the newest position the write appended
    appends = [s for s in sent if "change_log" in s]
    # The counter's update and the rows' insert: on PostgreSQL one round trip, whose lock on
    # the counter every writer waits for; SQLite has one writer at a time anyway.
    assert len(appends) == (1 if store.dialect == "postgresql" else 2)
    assert _log(store, 2) == [
        Change(3, RUNS, (A,)),
        Change(4, DECLARATIONS, (B,)),
        Change(5, TAGS, (A,)),
    ]


def test_a_transaction_that_records_nothing_appends_nothing(store: Store) -> None:
    store.write(lambda conn: None)
    store.write(_recording((RUNS, []), (ENTITIES, [])))

    assert _position(store) == 0
    assert _log(store) == []


def test_a_reload_stands_for_everything_else_the_transaction_recorded(store: Store) -> None:
    store.write(_recording((RUNS, [A]), (RELOAD, []), (ENTITIES, [B])))

    assert _log(store) == [Change(1, RELOAD, ())]


def test_what_a_rolled_back_transaction_recorded_is_never_appended(store: Store) -> None:
    def fails(conn: Connection) -> None:
        record(conn, RUNS, [A])
        raise RuntimeError("the write fails")

    with pytest.raises(RuntimeError):
        store.write(fails)
    store.write(lambda conn: None)  # likely on the same pooled connection
    store.write(_recording((ENTITIES, [B])))

    assert _log(store) == [Change(1, ENTITIES, (B,))]


def test_an_unknown_kind_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown kind of change: 'rows'"):
        store.write(_recording(("rows", [A])))
    assert _position(store) == 0


def test_a_reader_behind_the_trimmed_changes_is_told_to_reload(store: Store) -> None:
    for _ in range(5):
        store.write(_recording((RUNS, [A])))
    store.write(lambda conn: trim(conn, 2))

    with pytest.raises(ChangeLogGap) as gap:
        _log(store, 2)
    assert (gap.value.after, gap.value.oldest) == (2, 4)
    assert [c.position for c in _log(store, 3)] == [4, 5]
    assert _position(store) == 5


def test_trimming_keeps_the_newest_change_so_a_reader_behind_still_finds_the_gap(
    store: Store,
) -> None:
    for _ in range(3):
        store.write(_recording((RUNS, [A])))
    store.write(lambda conn: trim(conn, 0))

    assert _log(store, 2) == [Change(3, RUNS, (A,))]
    with pytest.raises(ChangeLogGap):
        _log(store, 1)


def test_appends_trim_the_log_as_it_passes_each_step(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_log, "KEEP", 3)
    monkeypatch.setattr(change_log, "TRIM_EVERY", 4)
    for _ in range(3):
        store.write(_recording((RUNS, [A])))
    assert [c.position for c in _log(store)] == [1, 2, 3]

    # Positions 4 and 5 pass a multiple of 4: only the newest 3 stay.
    store.write(_recording((RUNS, [A]), (TAGS, [B])))
    assert [c.position for c in _log(store, 2)] == [3, 4, 5]
    with pytest.raises(ChangeLogGap):
        _log(store, 1)


def test_concurrent_writers_become_visible_in_position_order(store: Store) -> None:
    """Writers on several connections commit after a random pause taken once their change is
    appended (the worst moment: a sequence's numbers would commit out of order there); a
    reader that follows the log never sees a position after one it has not seen, and ends
    with every change."""
    writers, writes_each = 6, 8

    @event.listens_for(store.engine, "commit")
    def _pause_before_commit(conn: Connection) -> None:
        time.sleep(random.uniform(0, 0.005))

    def write(writer: int) -> None:
        for n in range(writes_each):
            store.write(_recording((RUNS, [uuid.UUID(int=writer * 1000 + n)])))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    seen: list[Change] = []
    while True:
        writing = any(thread.is_alive() for thread in threads)
        after = seen[-1].position if seen else 0
        new = _log(store, after)
        assert [c.position for c in new] == list(range(after + 1, after + 1 + len(new)))
        seen.extend(new)
        if not writing:
            break
    for thread in threads:
        thread.join()

    assert len(seen) == writers * writes_each
    assert {c.ids for c in seen} == {
        (uuid.UUID(int=w * 1000 + n),) for w in range(writers) for n in range(writes_each)
    }
