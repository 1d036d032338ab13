"""A change makes a new version of the index by updating the old version's adjacency, not by
sorting every row again (`Adjacency.updated`): each version must hold exactly the adjacency
a fresh build from its own rows gives, and a change that links runs to field sets the graph
holds keeps the field edges' structures as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import column_lineage, ds, run_event
from tests.query import test_graph_index as random_graphs
from upstream.ingest.service import ingest_documents
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.field_graph import FieldGraph
from upstream.query.graph_index.graph import DATASET, JOB, Graph, Table
from upstream.query.graph_index.index import index_of
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.store.engine import Store

NS = "warehouse"
#: An empty store for each example (the random graphs' own fixture).
fresh = random_graphs.fresh


def _same(found: Adjacency, keys: np.ndarray, nodes: int) -> None:
    built = Adjacency(keys.astype(np.int32), nodes)
    assert found.rows.tolist() == built.rows.tolist()
    assert found.starts.tolist() == built.starts.tolist()


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


def _holds(found: Adjacency, table: Table, keys: np.ndarray, nodes: int) -> None:
    """`found` gives, for every node, the rows of `table`'s version a fresh build of its
    rows gives, as positions of the shared columns."""
    held = table.held
    built = Adjacency(keys[held].astype(np.int32), nodes)
    every = np.arange(nodes + 2, dtype=np.int64)  # and nodes numbered later
    rows, owner = found.rows_of(every)
    fresh_rows, fresh_owner = built.rows_of(every)
    assert rows.tolist() == held[fresh_rows].tolist()
    assert owner.tolist() == fresh_owner.tolist()


def _check(graph: Graph) -> None:
    datasets, jobs = len(graph.ids.datasets), len(graph.ids.jobs)
    relations, flows, edges = graph.relations, graph.flows, graph.edges
    _holds(graph.by_dataset, relations, relations["dataset"], datasets)
    _holds(graph.by_job, relations, relations["job"], jobs)
    _holds(graph.by_run, relations, relations["run"], len(graph.ids.runs))
    _holds(graph.by_source, flows, flows["source"], datasets)
    _holds(graph.by_target, flows, flows["target"], datasets)
    for side in ("source", "target"):
        for kind, code in (("dataset", DATASET), ("job", JOB)):
            keys = np.where(edges[f"{side}_type"] == code, edges[f"{side}_{kind}"], NONE)
            nodes = datasets if kind == "dataset" else jobs
            _holds(graph.edges_by[f"{side}_{kind}"], edges, keys, nodes)
    fields: FieldGraph = graph.fields
    _same(fields.links_by_set, fields.links["set"], len(fields.names.sets))
    _same(fields.by_source, fields.source_node, len(fields.node_keys))
    _same(fields.by_target, fields.target_node, len(fields.node_keys))


def _graph(store: Store) -> Graph:
    with store.read() as conn:
        return index_of(store.engine).graph(conn)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=random_graphs._graphs())
def test_every_version_a_change_makes_holds_the_adjacency_of_its_rows(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    store = fresh()
    events, _ = graph
    _graph(store)  # the index is loaded empty: every event below is a change applied to it
    for event in events:
        ingest_documents(store, [event], batch=False)
        _check(_graph(store))


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
