"""A change makes a new version of the index without copying the old one (design §6): its
rows are appended to the columns the old version views, and its adjacency shares the old
arrays, with the rows it dropped and the rows appended since kept apart
(`Adjacency.changed`), until a fresh base is made (`Adjacency.updated`). Each version, older
ones included after newer ones were made, must hold exactly the rows and the adjacency a fresh
build gives, and a change that links runs to field sets the graph holds keeps the field
edges' structures as they are."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import column_lineage, ds, run_event
from tests.query import test_graph_index as random_graphs
from upstream.ingest.service import ingest_documents
from upstream.query.graph_index import graph as graph_module
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.field_graph import FieldGraph
from upstream.query.graph_index.graph import DATASET, JOB, Graph, Table, applied, load
from upstream.query.graph_index.index import index_of
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.store import change_log
from upstream.store.engine import Store

NS = "warehouse"
#: An empty store for each example (the random graphs' own fixture).
fresh = random_graphs.fresh


def _same(found: Adjacency, keys: np.ndarray, nodes: int, held: np.ndarray | None = None) -> None:
    """`found` gives, for every node (and nodes numbered later), the rows a fresh build of
    the rows `held` (positions; None: every row) gives, as positions."""
    held = np.arange(len(keys), dtype=np.int64) if held is None else held
    built = Adjacency(keys[held].astype(np.int32), nodes)
    every = np.arange(nodes + 2, dtype=np.int64)
    rows, owner = found.rows_of(every)
    fresh_rows, fresh_owner = built.rows_of(every)
    assert rows.tolist() == held[fresh_rows].tolist()
    assert owner.tolist() == fresh_owner.tolist()


@given(
    keys=st.lists(st.integers(-1, 9), max_size=40),
    kept=st.lists(st.booleans(), min_size=40, max_size=40),
    added=st.lists(st.integers(-1, 12), max_size=12),
    more=st.integers(0, 3),
)
def test_an_updated_adjacency_is_the_one_built_afresh(
    keys: list[int], kept: list[bool], added: list[int], more: int
) -> None:
    old_keys = np.array(keys, dtype=np.int32)
    keep = np.array(kept[: len(keys)], dtype=np.bool_)
    new_keys = np.array(added, dtype=np.int32)
    nodes = max([10, *added]) + more
    updated = Adjacency(old_keys, 10).updated(keep, new_keys, nodes)
    _same(updated, np.concatenate([old_keys[keep], new_keys]), nodes)


@given(
    keys=st.lists(st.integers(-1, 9), max_size=30),
    steps=st.lists(
        st.tuples(
            st.lists(st.integers(0, 60), max_size=8), st.lists(st.integers(-1, 12), max_size=8)
        ),
        max_size=5,
    ),
    asked=st.lists(st.integers(0, 14), max_size=20),
)
def test_a_changed_adjacency_gives_the_rows_a_fresh_build_gives(
    keys: list[int], steps: list[tuple[list[int], list[int]]], asked: list[int]
) -> None:
    """Rows dropped and rows appended, change after change, over the same arrays: for any
    nodes asked (repeated, unordered, numbered later), the rows of a fresh build of the rows
    held, as their positions."""
    column = np.array(keys, dtype=np.int32)
    adjacency = Adjacency(column, 10)
    dropped = np.zeros(0, dtype=np.int64)
    for drop, added in steps:
        dropped = np.union1d(dropped, [d for d in drop if d < len(column)]).astype(np.int64)
        new_keys = np.array(added, dtype=np.int32)
        gone = np.zeros(len(column) + len(added), dtype=np.bool_)
        gone[dropped] = True
        adjacency = adjacency.changed(gone, len(column), new_keys)
        column = np.concatenate([column, new_keys])
    held = np.delete(np.arange(len(column), dtype=np.int64), dropped)
    nodes = np.array(asked, dtype=np.int64)
    rows, owner = adjacency.rows_of(nodes)
    fresh_rows, fresh_owner = Adjacency(column[held], 13).rows_of(nodes)
    assert rows.tolist() == held[fresh_rows].tolist()
    assert owner.tolist() == fresh_owner.tolist()


def _check(graph: Graph) -> None:
    datasets, jobs = len(graph.ids.datasets), len(graph.ids.jobs)
    relations, flows, edges = graph.relations, graph.flows, graph.edges
    _same(graph.by_dataset, relations["dataset"], datasets, relations.held)
    _same(graph.by_job, relations["job"], jobs, relations.held)
    _same(graph.by_run, relations["run"], len(graph.ids.runs), relations.held)
    _same(graph.by_source, flows["source"], datasets, flows.held)
    _same(graph.by_target, flows["target"], datasets, flows.held)
    for side in ("source", "target"):
        for kind, code in (("dataset", DATASET), ("job", JOB)):
            keys = np.where(edges[f"{side}_type"] == code, edges[f"{side}_{kind}"], NONE)
            nodes = datasets if kind == "dataset" else jobs
            _same(graph.edges_by[f"{side}_{kind}"], keys, nodes, edges.held)
    fields: FieldGraph = graph.fields
    _same(fields.links_by_set, fields.links["set"], len(fields.names.sets), fields.links.held)
    _same(fields.by_source, fields.source_node, len(fields.node_keys))
    _same(fields.by_target, fields.target_node, len(fields.node_keys))


def _graph(store: Store) -> Graph:
    with store.read() as conn:
        return index_of(store.engine).graph(conn)


Rows = dict[str, list[tuple[Any, ...]]]


def _rows(graph: Graph) -> Rows:
    """Every row each table of `graph` holds, in order."""
    found: Rows = {}
    for name in ("relations", "flows", "edges"):
        table: Table = getattr(graph, name)
        columns = [table[c][table.held].tolist() for c in table.columns]
        found[name] = list(zip(*columns, strict=True))
    return found


def _sorted(rows: Rows) -> Rows:
    return {name: sorted(held) for name, held in rows.items()}


@pytest.mark.parametrize("compact_at", [graph_module.COMPACT_AT, 100.0])
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=random_graphs._graphs())
def test_every_version_a_change_makes_holds_the_rows_and_adjacency_of_a_fresh_build(
    fresh: Any, monkeypatch: Any, compact_at: float, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    """Every version, checked again after every later one was made: its rows are those a
    fresh load at its position holds, and its adjacency is the one they build. With changes
    never compacted, every version appends to the columns of the first."""
    monkeypatch.setattr(graph_module, "COMPACT_AT", compact_at)
    store = fresh()
    events, _ = graph
    _graph(store)  # the index is loaded empty: every event below is a change applied to it
    versions: list[tuple[Graph, Rows]] = []
    for event in events:
        ingest_documents(store, [event], batch=False)
        made = _graph(store)
        with store.read() as conn:
            afresh = load(conn, made.position, made.ids, fields=False)
        assert _sorted(_rows(made)) == _sorted(_rows(afresh))
        versions.append((made, _rows(made)))
        for version, rows in versions:
            assert _rows(version) == rows
            _check(version)


def _event(job: str, source: str, target: str) -> tuple[str, dict[str, Any]]:
    run = str(uuid.uuid4())
    return run, run_event((NS, job), run_id=run, inputs=[ds(NS, source)], outputs=[ds(NS, target)])


def _runs_of(graph: Graph) -> set[int]:
    return set(graph.relations["run"][graph.relations.held].tolist())


def test_a_version_a_change_makes_shares_the_columns_and_adjacency_of_the_one_before(
    store: Store,
) -> None:
    """The change appends its rows in place: the columns are views of the same arrays, the
    adjacency keeps the same arrays, and the version holds only its new rows' adjacency."""
    events = [_event(f"load_{n}", f"raw_{n}", f"staged_{n}")[1] for n in range(20)]
    ingest_documents(store, events, batch=True)
    before = _graph(store)
    run, event = _event("load_0", "raw_0", "staged_0")
    ingest_documents(store, [event], batch=False)
    after = _graph(store)
    assert len(after.relations) == len(before.relations) + 2  # a read and a write appended
    for table in ("relations", "flows"):  # no job-end edges here
        for name, column in getattr(before, table).columns.items():
            assert np.shares_memory(getattr(after, table)[name], column)
    for name in ("by_dataset", "by_job", "by_run", "by_source", "by_target"):
        shared, made = getattr(before, name), getattr(after, name)
        assert made.rows is shared.rows
        assert made.starts is shared.starts
    assert sorted(after.by_dataset.extra_rows.tolist()) == [
        len(before.relations),
        len(before.relations) + 1,
    ]
    assert after.ids.runs.known(run) in _runs_of(after)
    _check(after)


def test_a_version_brought_forward_twice_keeps_the_rows_of_each(
    store: Store, monkeypatch: Any
) -> None:
    """An older version brought forward again once a newer one appended past it (a reader of
    an older snapshot): the second does not write over the rows the first appended."""
    monkeypatch.setattr(graph_module, "COMPACT_AT", 100.0)
    ingest_documents(store, [_event("load", "raw", "staged")[1]], batch=True)
    before = _graph(store)
    (first, one), (second, other) = _event("a", "raw", "a_out"), _event("b", "raw", "b_out")
    ingest_documents(store, [one, other], batch=False)
    with store.read() as conn:
        at = change_log.position(conn)
        ones = applied(conn, before, at, [uuid.UUID(first)], [], [])
        others = applied(conn, before, at, [uuid.UUID(second)], [], [])
    numbers = before.ids.runs
    assert numbers.known(first) in _runs_of(ones)
    assert numbers.known(second) not in _runs_of(ones)
    assert numbers.known(second) in _runs_of(others)
    assert numbers.known(first) not in _runs_of(others)
    assert not np.shares_memory(others.relations["run"], ones.relations["run"])
    _check(ones)
    _check(others)


def _copy(job: str, source: str, target: str) -> dict[str, Any]:
    lineage = column_lineage({"id": [(NS, source, "id")]})
    return run_event(
        (NS, job), inputs=[ds(NS, source)], outputs=[ds(NS, target, columnLineage=lineage)]
    )


def test_a_run_linked_to_field_sets_the_index_holds_keeps_its_field_edges(store: Store) -> None:
    ingest_documents(store, [_copy("load", "raw", "staged")], batch=True)
    before = _graph(store).fields
    ingest_documents(store, [_copy("load", "raw", "staged")], batch=True)  # a second run
    after = _graph(store)
    assert len(after.fields.links) == len(before.links) + 1
    assert after.fields.by_source is before.by_source
    assert after.fields.node_keys is before.node_keys
    _check(after)


def test_the_ids_order_is_kept_until_an_id_is_numbered() -> None:
    numbering = Numbering()
    for text in ("c", "a", "b"):
        numbering.number(text)
    order = numbering.text_order()
    assert order.tolist() == [2, 0, 1, 3]  # the places of c, a, b, and of an id numbered later
    assert numbering.text_order() is order
    numbering.number("a")  # numbered already: nothing changes
    assert numbering.text_order() is order
    numbering.number("ab")
    assert numbering.text_order().tolist() == [3, 0, 2, 1, 4]
