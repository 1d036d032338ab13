"""Reads waiting for the index a server is loading (`query.graph_index.index`): they go on
as soon as that load ends, whether it loaded the index or failed."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import GraphIndex
from upstream.store.engine import Store


class _Unreadable:
    """A connection whose every statement fails, as a database going away mid-load."""

    def execute(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("the database went away")


def test_a_failed_load_lets_its_waiting_reader_load_the_index_itself(store: Store) -> None:
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
    with pytest.raises(RuntimeError):
        index.load_now(_Unreadable())  # type: ignore[arg-type]
    reader.join(timeout=10)
    # Without the end of the failed load waking it, the reader would wait its whole minute
    # and then be told the index is still loading.
    assert not reader.is_alive()
    assert len(answers) == 1
    assert index.loaded
