"""A read finds the index's version for its snapshot once (`query.graph_index.index`): it
may ask many times (a dispatcher round renders each notification), and its snapshot does
not move; the next read finds the version of its own."""

from __future__ import annotations

from datetime import timedelta

from tests.builders import BASE_TIME, ds, run_event
from tests.watch.test_dispatcher_memory import statements as statements_of
from upstream.ingest.service import ingest_documents
from upstream.query.answers import LineageAnswer
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.graph_index.index import graph_of
from upstream.query.lineage_params import LineageParams
from upstream.store.engine import Store


def _asked_position(seen: list[str]) -> int:
    return len([s for s in seen if "FROM change_log_head" in s])


def test_a_read_asks_the_change_log_position_once_and_the_next_read_again(
    store: Store,
) -> None:
    ingest_documents(store, [run_event(("ns", "etl"), outputs=[ds("ns", "a")])], batch=False)
    with store.read() as conn, statements_of(store) as seen:
        first = graph_of(conn)
        assert graph_of(conn) is first
        assert graph_of(conn) is first
    assert _asked_position(seen) == 1

    ingest_documents(store, [run_event(("ns", "etl"), outputs=[ds("ns", "b")])], batch=False)
    with store.read() as conn, statements_of(store) as seen:
        later = graph_of(conn)
        assert graph_of(conn) is later
    assert _asked_position(seen) == 1
    assert later.position > first.position


def test_a_lineage_read_finds_its_start_and_the_position_in_one_statement(
    statements: tuple[Store, list[str]],
) -> None:
    """The start dataset's lookup reads the change log's position too, so a lineage answer
    whose names the process holds asks one statement in all: each is a round trip."""
    store, found = statements
    ingest_documents(
        store,
        [run_event(("ns", "etl"), inputs=[ds("ns", "a")], outputs=[ds("ns", "b")])],
        batch=False,
    )
    params = LineageParams(start=BASE_TIME - timedelta(days=1), end=BASE_TIME + timedelta(days=1))

    def answer() -> LineageAnswer:
        with store.read() as conn:
            return dataset_lineage(conn, "ns", "a", params, max_nodes=50, max_relations=50)

    first = answer()  # loads the index and reads the names, once per process
    found.clear()
    assert answer() == first
    asked = [s for s in found if s.strip().upper() != "BEGIN"]
    assert len(asked) == 1, asked
    assert "change_log_head" in asked[0]
    assert "dataset_aliases" in asked[0]
