"""A read finds the index's version for its snapshot once (`query.graph_index.index`): it
may ask many times (a dispatcher round renders each notification), and its snapshot does
not move; the next read finds the version of its own."""

from __future__ import annotations

from tests.builders import ds, run_event
from tests.watch.test_dispatcher_memory import statements
from upstream.ingest.service import ingest_documents
from upstream.query.graph_index.index import graph_of
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
