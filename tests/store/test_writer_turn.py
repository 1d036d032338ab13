"""Writers of one SQLite file take turns on a file lock beside it (`store.writer_turn`)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from upstream.store.engine import Store, sqlite_file
from upstream.store.writer_turn import turn_file, writer_turn


def _taken(database: Path) -> bool:
    """Whether some descriptor holds the turn to write `database`."""
    handle = os.open(turn_file(database), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    return False


def test_a_write_holds_the_turn_until_it_ends(store: Store) -> None:
    database = sqlite_file(str(store.url))
    if database is None:
        assert store.write(lambda conn: 1) == 1  # PostgreSQL: no file, no turn
        return
    during: list[bool] = []
    store.write(lambda conn: during.append(_taken(database)))
    assert during == [True]
    assert not _taken(database)  # given back with the commit
    with pytest.raises(ZeroDivisionError):
        store.write(lambda conn: 1 / 0)
    assert not _taken(database)  # and with a rollback


def test_a_writer_waits_for_the_turn_then_takes_it(tmp_path: Path) -> None:
    database = tmp_path / "upstream.db"
    order: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def first() -> None:
        with writer_turn(database, 30):
            order.append("first")
            holding.set()
            release.wait(30)
            order.append("first done")

    other = threading.Thread(target=first)
    other.start()
    holding.wait(30)
    threading.Timer(0.2, release.set).start()
    with writer_turn(database, 30):
        order.append("second")
    other.join(30)
    assert order == ["first", "first done", "second"]


def test_a_writer_past_its_wait_goes_on_without_the_turn(tmp_path: Path) -> None:
    database = tmp_path / "upstream.db"
    with writer_turn(database, 30), writer_turn(database, 0.01):
        assert _taken(database)  # the first holds it; the second went on regardless
