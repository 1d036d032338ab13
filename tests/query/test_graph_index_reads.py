"""A read finds the index's version for its snapshot once (`query.graph_index.index`): it
may ask many times (a dispatcher round renders each notification), and its snapshot does
not move; the next read finds the version of its own, and one whose snapshot is older than
the index's newest version is brought to it from an older one."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from tests.builders import ds, run_event
from tests.watch.test_dispatcher_memory import statements
from upstream.ingest.service import ingest_documents
from upstream.query.graph_index import index as index_module
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.store.change_log import position
from upstream.store.engine import Store


def _asked_position(seen: list[str]) -> int:
    return len([s for s in seen if "FROM change_log_head" in s])


def test_a_read_asks_the_change_log_position_once_and_the_next_read_again(
    store: Store,
) -> None:
    ingest_documents(store, [run_event(("ns", "etl"), outputs=[ds("ns", "a")])], batch=False)
    with store.read() as conn, statements(store) as seen:
        first = graph_of(conn)
        assert graph_of(conn) is first
        assert graph_of(conn) is first
    assert _asked_position(seen) == 1

    ingest_documents(store, [run_event(("ns", "etl"), outputs=[ds("ns", "b")])], batch=False)
    with store.read() as conn, statements(store) as seen:
        later = graph_of(conn)
        assert graph_of(conn) is later
    assert _asked_position(seen) == 1
    assert later.position > first.position


def _runs_in(graph: Graph) -> set[str]:
    texts = graph.ids.runs.texts
    return {texts[n] for n in np.unique(graph.relations["run"]) if n >= 0}


def test_a_snapshot_older_than_the_index_is_brought_from_a_kept_version_not_loaded(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read whose snapshot began before another read moved the index on (or one on a
    replica behind) answers from the newest kept version its snapshot includes, brought to
    its position by the changes between: never a load of everything."""
    first, second, third = (
        run_event(("ns", "etl"), run_id=str(uuid.uuid4()), outputs=[ds("ns", name)])
        for name in ("a", "b", "c")
    )
    ingest_documents(store, [first], batch=False)
    with store.read() as conn:
        kept = graph_of(conn)
    ingest_documents(store, [second], batch=False)
    with store.read() as old:
        at = position(old)  # the snapshot holds the first two runs
        ingest_documents(store, [third], batch=False)
        with store.read() as conn:
            newest = graph_of(conn)
        assert newest.position > at > kept.position

        def refused(*_args: Any, **_kwargs: Any) -> Graph:
            raise AssertionError("a kept version was there to bring forward")

        monkeypatch.setattr(index_module, "load", refused)
        older = graph_of(old)
    assert older.position == at
    assert _runs_in(older) == {first["run"]["runId"], second["run"]["runId"]}
    assert _runs_in(newest) == {e["run"]["runId"] for e in (first, second, third)}
    with store.read() as conn:
        assert graph_of(conn) is newest  # still the newest version
