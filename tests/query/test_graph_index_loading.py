"""Reads waiting for the index a server is loading (`query.graph_index.index`): they go on
as soon as that load ends, whether it loaded the index or failed — mid-load, or before its
first statement because the database refused the connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import StoreUnavailable
from upstream.query.graph_index import index as index_module
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import GraphIndex, index_of, load_in_background
from upstream.store.engine import Store, Timeouts


class _Unreadable:
    """A connection whose every statement fails, as a database going away mid-load."""

    def execute(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("the database went away")


@contextmanager
def _unreadable() -> Iterator[Connection]:
    yield _Unreadable()  # type: ignore[misc]


@contextmanager
def _refused() -> Iterator[Connection]:
    """A read the database refuses to open (too many connections, say)."""
    raise StoreUnavailable("the database refused the connection")
    yield


@pytest.mark.parametrize("failing", [_unreadable, _refused], ids=["mid-load", "at-connect"])
def test_a_failed_load_lets_its_waiting_reader_load_the_index_itself(
    store: Store, failing: Callable[[], AbstractContextManager[Connection]]
) -> None:
    index = GraphIndex()
    index.begin_loading()
    answers: list[Graph] = []
    connected = threading.Event()

    def read() -> None:
        with store.read() as conn:
            connected.set()
            answers.append(index.graph(conn, wait=60))

    reader = threading.Thread(target=read)
    reader.start()
    assert connected.wait(30)
    time.sleep(0.5)  # the reader is waiting for the load by now
    with pytest.raises((RuntimeError, StoreUnavailable)):
        index.load_now(failing)
    reader.join(timeout=10)
    # Without the end of the failed load waking it, the reader would wait its whole minute
    # and then be told the index is still loading.
    assert not reader.is_alive()
    assert len(answers) == 1
    assert index.loaded


def test_a_server_whose_first_read_is_refused_is_not_left_loading(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start's load could not even open its read: reads must not wait for a load that
    will never end (every one of them answered 503 until a restart, before)."""
    opened = store.read
    refusals = iter([_refused])

    def first_refused(**options: Any) -> AbstractContextManager[Connection]:
        return next(refusals, opened)(**options)

    monkeypatch.setattr(store, "read", first_refused)
    load_in_background(store).join(timeout=30)
    index = index_of(store.engine)
    with store.read() as conn:
        graph = index.graph(conn, wait=1)
    assert graph.position == 0
    assert index.loaded


def test_a_servers_index_load_is_held_to_no_deadline(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's load of a large store's index may take longer than a request's deadline
    (here a load made to take over a second, against a 0.3 s statement timeout): it runs to
    its end rather than fail and leave every read to load the index within that deadline."""
    from tests.store.test_database_outage import SECONDS_LONG_QUERY

    real_load = index_module.load

    def slow_load(conn: Connection, *args: Any, **kwargs: Any) -> Graph:
        conn.execute(sa.text(SECONDS_LONG_QUERY[conn.dialect.name]))
        return real_load(conn, *args, **kwargs)

    monkeypatch.setattr(index_module, "load", slow_load)
    store = Store(db_url, timeouts=Timeouts(statement=0.3))
    try:
        load_in_background(store).join(60)
        assert index_of(store.engine).loaded
    finally:
        store.dispose()
