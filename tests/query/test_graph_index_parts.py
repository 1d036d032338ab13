"""An index that holds the field graph only when questions want it (`GraphIndex.fields_wanted`,
turned off by the command line for a dataset's or a run's lineage): without it, it answers
dataset lineage as a whole index does and follows changes; a field question loads it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import column_lineage, ds, run_event
from upstream.commands.database_reader import DatabaseReader
from upstream.ingest.service import ingest_documents
from upstream.query.graph_index.graph import Graph, load
from upstream.query.graph_index.index import index_of
from upstream.query.lineage_query import FieldLineageQuery, LineageQuery
from upstream.settings import Settings
from upstream.store import graph_rows
from upstream.store.change_log import position
from upstream.store.engine import Store, Timeouts

NS = "warehouse"
WINDOW = {"start": "2026-10-31T00:00:00Z", "end": "2026-11-02T00:00:00Z"}


def _copy(job: str, source: str, target: str) -> dict[str, Any]:
    """A run of `job` copying `source` into `target`, field `id` from field `id`."""
    lineage = column_lineage({"id": [(NS, source, "id")]})
    return run_event(
        (NS, job), inputs=[ds(NS, source)], outputs=[ds(NS, target, columnLineage=lineage)]
    )


@pytest.fixture
def reader(store: Store, settings: Settings) -> DatabaseReader:
    ingest_documents(
        store, [_copy("load", "raw", "staged"), _copy("build", "staged", "mart")], batch=True
    )
    return DatabaseReader(store, settings)


def _graph(store: Store) -> Graph:
    with store.read() as conn:
        return index_of(store.engine).graph(conn)


def _lineage(reader: DatabaseReader, name: str) -> Any:
    query = LineageQuery(direction="upstream", levels="5", **WINDOW)
    return reader.dataset_lineage(NS, name, query)


def _datasets(answer: Any) -> set[str]:
    return {relation["data"] for relation in answer["relations"]}


def test_a_dataset_question_loads_no_field_graph_and_answers_as_the_api(
    reader: DatabaseReader, client: TestClient
) -> None:
    answer = _lineage(reader, "mart")
    api = client.get(f"/v3/namespaces/{NS}/datasets/mart/lineage", params=WINDOW | {
        "direction": "upstream", "levels": 5
    })  # fmt: skip
    assert answer == api.json()
    assert _datasets(answer) == {f"dataset.{NS}.{n}" for n in ("raw", "staged", "mart")}
    graph = _graph(reader.store)
    assert graph.field_part is None
    with pytest.raises(LookupError, match="without its field graph"):
        _ = graph.fields


def test_a_field_question_after_it_loads_the_field_graph(reader: DatabaseReader) -> None:
    _lineage(reader, "mart")
    summary = reader.field_lineage_summary(
        NS, "mart", "id", FieldLineageQuery(direction="incoming", levels="5", **WINDOW)
    )
    graph = _graph(reader.store)
    # Two field edges: raw.id -> staged.id and staged.id -> mart.id.
    assert graph.field_part is not None
    assert len(graph.fields.edges) == 2
    reached = {(e["dataset"]["name"], f) for e in summary["incoming"] for f in e["fields"]}
    assert reached == {("raw", "id"), ("staged", "id")}
    # And the dataset question after it still answers the same.
    assert _datasets(_lineage(reader, "mart")) == {
        f"dataset.{NS}.{n}" for n in ("raw", "staged", "mart")
    }


def test_an_index_without_fields_follows_changes(reader: DatabaseReader) -> None:
    _lineage(reader, "mart")
    before = _graph(reader.store).position
    ingest_documents(reader.store, [_copy("feed", "source", "raw")], batch=True)
    answer = _lineage(reader, "mart")
    assert _datasets(answer) == {f"dataset.{NS}.{n}" for n in ("source", "raw", "staged", "mart")}
    graph = _graph(reader.store)
    assert graph.position > before
    assert graph.field_part is None


def test_rows_read_a_few_at_a_time_make_the_same_index(
    reader: DatabaseReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    with reader.store.read() as conn:
        whole = load(conn, position(conn))
        monkeypatch.setattr(graph_rows, "CHUNK_ROWS", 1)
        chunked = load(conn, position(conn))
    # Two runs: a read and a write relation each, one flow each, and one field edge each.
    assert (len(whole.relations), len(whole.flows), len(whole.fields.edges)) == (4, 2, 2)
    for table in ("relations", "flows", "edges"):
        one, other = getattr(whole, table).columns, getattr(chunked, table).columns
        assert one.keys() == other.keys()
        for name in one:
            assert np.array_equal(one[name], other[name]), (table, name)
    for name in whole.fields.edges.columns:
        assert np.array_equal(whole.fields.edges[name], chunked.fields.edges[name])


def test_a_command_waits_for_its_index_past_a_requests_deadline(
    db_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command run by hand (`upstream lineage --db`) on a store whose index takes longer
    to load than a request's deadline (here over a second, against 0.3 s) answers once it
    has loaded, rather than fail at that deadline."""
    from tests.store.test_database_outage import SECONDS_LONG_QUERY
    from upstream.query.graph_index import index as index_module

    def slow_load(conn: Any, *args: Any, **kwargs: Any) -> Graph:
        conn.execute(sa.text(SECONDS_LONG_QUERY[conn.dialect.name]))
        return load(conn, *args, **kwargs)

    filling = Store(db_url)
    ingest_documents(filling, [_copy("load", "raw", "staged")], batch=True)
    filling.dispose()
    monkeypatch.setattr(index_module, "load", slow_load)
    store = Store(db_url, timeouts=Timeouts(statement=0.3))
    try:
        answer = _lineage(DatabaseReader(store, settings), "staged")
        assert _datasets(answer) == {f"dataset.{NS}.{n}" for n in ("raw", "staged")}
    finally:
        store.dispose()
