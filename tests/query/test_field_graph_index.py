"""The graph index's field graph (design §6) answers the field walks exactly as the stored field
edges say.

Random small graphs — runs whose `columnLineage` and lineage facets state field edges (with
and without transformations, into fields, whole datasets and jobs) at random times, the lineage
facet outranking `columnLineage` for its output, job declarations replaced over time,
deletions — are stored in a random order on both stores, the index brought forward between
writes at random points. Every field answer of the index must equal a naive walk written here
from design §4.3 over the stored field edge rows, read back with plain statements.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    job_entry,
    job_event,
    lineage_facet,
    run_event,
)
from tests.query.test_graph_index import WINDOWS, _in_window, _when, fresh
from upstream.ingest.service import ingest_documents
from upstream.model.facts import ORIGIN_SHOWN
from upstream.model.identity import DatasetRef
from upstream.model.window import Window
from upstream.query.field_edges import Side, one_sided_edges
from upstream.query.graph_index.field_walk import FieldEdge, FieldEdges, field_hops, field_reach
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.store import schema as t
from upstream.store.deletion import mark_deleted
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store

__all__ = ["fresh"]  # the store fixture, shared with the dataset walks' property

NS = "fields"
DATASETS = [f"d{i}" for i in range(4)]
FIELDS = ["a", "b", "c"]
JOBS = [f"j{i}" for i in range(2)]
DATASET_IDS = [DatasetRef(NS, name).id for name in DATASETS]
FieldNode = tuple[uuid.UUID, str]
#: A field edge as a diff names it: source dataset id (text), field, target id, field.
EdgeKey = tuple[str, str, str, str]

# -- random graphs --------------------------------------------------------------------------

_field_inputs = st.lists(
    st.tuples(st.sampled_from(DATASETS), st.sampled_from(FIELDS)), max_size=2, unique=True
)


@st.composite
def _column_lineage(draw: st.DrawFn) -> dict[str, Any]:
    """A columnLineage facet: each of a few output fields from a few input fields, maybe
    with dataset-wide inputs."""
    outputs = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique=True))
    fields = {out: [(NS, d, f) for d, f in draw(_field_inputs)] for out in outputs}
    wide = draw(st.one_of(st.none(), _field_inputs))
    return column_lineage(fields, None if wide is None else [(NS, d, f) for d, f in wide])


@st.composite
def _lineage_entry(draw: st.DrawFn, output: str) -> dict[str, Any]:
    """A lineage-facet entry for `output` with field edges, some with a transformation."""
    fields: dict[str, list[dict[str, Any]]] = {}
    for out in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique=True)):
        inputs = []
        for dataset, field in draw(_field_inputs):
            if draw(st.booleans()):
                inputs.append(dataset_input(NS, dataset, field, type="DIRECT", subtype="IDENTITY"))
            else:
                inputs.append(dataset_input(NS, dataset, field))
        fields[out] = inputs
    return dataset_entry(NS, output, fields=fields)


@st.composite
def _run(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One run's events: START with its inputs, COMPLETE (or the START itself) with its
    outputs, their columnLineage and maybe a lineage facet."""
    job = (NS, draw(st.sampled_from(JOBS)))
    run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job[1]}/{draw(st.integers(1, 2**64))}"))
    start = draw(st.integers(0, 40))
    inputs = draw(st.lists(st.sampled_from(DATASETS), max_size=2, unique=True))
    outputs = [
        ds(NS, name, columnLineage=draw(_column_lineage()))
        for name in draw(st.lists(st.sampled_from(DATASETS), min_size=1, max_size=2, unique=True))
    ]
    facets: dict[str, Any] = {}
    if draw(st.booleans()):
        entries = [draw(_lineage_entry(outputs[0]["name"]))]
        if draw(st.booleans()):
            # A field feeding a job: an edge with one field end.
            dataset, field = draw(st.sampled_from(DATASETS)), draw(st.sampled_from(FIELDS))
            entries.append(job_entry(inputs=[dataset_input(NS, dataset, field)]))
        facets = lineage_facet(*entries)
    first = run_event(
        job,
        run_id=run_id,
        event_type="START",
        time=_when(start),
        inputs=[ds(NS, d) for d in inputs],
    )
    if draw(st.booleans()):
        first["outputs"], first["job"]["facets"] = outputs, facets
        return [first]
    end = _when(start + draw(st.integers(0, 6)))
    return [first, run_event(job, run_id=run_id, time=end, outputs=outputs, job_facets=facets)]


@st.composite
def _declaration(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A JobEvent declaring its job's field lineage, which a later one replaces (or one at
    the same time, whose declaration keeps its id with other edges)."""
    job = (NS, draw(st.sampled_from(JOBS)))
    outputs = [
        ds(NS, name, columnLineage=draw(_column_lineage()))
        for name in draw(st.lists(st.sampled_from(DATASETS), max_size=2, unique=True))
    ]
    return [job_event(job, time=_when(draw(st.sampled_from([5, 15, 30]))), outputs=outputs)]


@st.composite
def _graphs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[bool], list[str]]:
    """Events in a random order, after which of them the index is read (so it is brought
    forward change by change), and the datasets deleted at the end."""
    groups = draw(st.lists(st.one_of(_run(), _run(), _declaration()), min_size=1, max_size=6))
    events = draw(st.permutations([event for group in groups for event in group]))
    reads = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    deleted = draw(st.lists(st.sampled_from(DATASETS), max_size=1, unique=True))
    return events, reads, deleted


# -- the naive walk -------------------------------------------------------------------------


class _StoredEdges:
    """Every stored field edge an answer may count in `window` (None: every current one),
    read back with plain statements."""

    def __init__(self, store: Store, window: Window | None) -> None:
        with store.read() as conn:
            runs = {r.id: r for r in conn.execute(sa.select(t.runs))}
            self.deleted = set(conn.execute(sa.select(t.deletions.c.entity_id)).scalars())
            current = list(conn.execute(sa.select(EDGES)))
            history = list(conn.execute(sa.select(t.declared_edges)))
            declarations = {d.id: d for d in conn.execute(sa.select(t.declarations))}

        def run_in(run_id: uuid.UUID | None) -> bool:
            if window is None or run_id is None:
                return True
            run = runs.get(run_id)
            return run is not None and _in_window(run.started_at, run.ended_at, window)

        def in_force(declaration: Any) -> bool:
            as_of = window.as_of if window is not None else None
            return as_of is not None and (
                declaration.declared_at <= as_of
                and (declaration.replaced_at is None or declaration.replaced_at > as_of)
            )

        as_of = window.as_of if window is not None else None
        rows = [e for e in current if as_of is None or e.scope == "run"]
        rows += [e for e in history if in_force(declarations[e.declaration_id])]
        self.rows = [
            e
            for e in rows
            if run_in(e.run_id) and (e.source_field is not None or e.target_field is not None)
        ]

    def live(self, dataset: uuid.UUID | None) -> bool:
        return dataset not in self.deleted

    def field_to_field(self) -> list[Any]:
        return [e for e in self.rows if e.source_field is not None and e.target_field is not None]


def naive_reach(
    stored: _StoredEdges, starts: Iterable[FieldNode], direction: str, levels: int
) -> dict[FieldNode, tuple[int, set[str]]]:
    """Design §4.3 written plainly: least hops by relaxing every edge until nothing changes
    (never onto a deleted dataset), then the origins of the edges that reach each field
    from a field one hop nearer."""
    near, far = ("target", "source") if direction == "upstream" else ("source", "target")
    steps = [
        (
            (getattr(e, f"{near}_dataset_id"), getattr(e, f"{near}_field")),
            (getattr(e, f"{far}_dataset_id"), getattr(e, f"{far}_field")),
            ORIGIN_SHOWN[e.origin],
        )
        for e in stored.field_to_field()
    ]
    begun = set(starts)
    depth = dict.fromkeys(begun, 0)
    changed = True
    while changed:
        changed = False
        for start, end, _ in steps:
            if start in depth and end not in begun and stored.live(end[0]):
                reached = depth[start] + 1
                if reached <= levels and reached < depth.get(end, levels + 1):
                    depth[end] = reached
                    changed = True
    found: dict[FieldNode, tuple[int, set[str]]] = {
        node: (d, set()) for node, d in depth.items() if node not in begun
    }
    for start, end, origin in steps:
        if end in found and start in depth and depth[start] + 1 == found[end][0]:
            found[end][1].add(origin)
    return found


def naive_edges(stored: _StoredEdges) -> list[FieldEdge]:
    """The field -> field edges between datasets not deleted, as the column graph reads them."""
    return [
        _edge(e)
        for e in stored.field_to_field()
        if stored.live(e.source_dataset_id) and stored.live(e.target_dataset_id)
    ]


def _edge(e: Any) -> FieldEdge:
    return FieldEdge(
        (e.source_dataset_id, e.source_field),
        (e.target_dataset_id, e.target_field),
        list(e.transformations or []),
        e.origin,
    )


def _hashable(edges: Iterable[FieldEdge]) -> set[tuple[Any, ...]]:
    return {(e.source, e.target, repr(e.transformations), e.origin) for e in edges}


# -- the property ---------------------------------------------------------------------------


def _store(fresh: Any, graph: tuple[list[dict[str, Any]], list[bool], list[str]]) -> Store:
    events, reads, deleted = graph
    store = fresh()
    for event, read in zip(events, reads, strict=True):
        ingest_documents(store, [event], batch=False)
        if read:
            with store.read() as conn:
                graph_of(conn)
    doomed = [DatasetRef(NS, name).id for name in deleted]
    store.write(lambda conn: mark_deleted(conn, "dataset", doomed, BASE_TIME + timedelta(days=9)))
    return store


def _check_walks(index: Graph, stored: _StoredEdges, window: Window) -> None:
    every = [(d, f) for d in DATASET_IDS for f in FIELDS]
    for starts in [[node] for node in every] + [[(d, f) for f in FIELDS] for d in DATASET_IDS]:
        for direction in ("upstream", "downstream"):
            for levels in (1, 2, 3):
                expected = naive_reach(stored, starts, direction, levels)
                reach = field_reach(index, starts, direction, levels, window)
                assert reach == {n: o for n, (_, o) in expected.items()}, (starts, direction)
                hops = field_hops(index, starts, direction, levels, window)
                assert hops == {n: d for n, (d, _) in expected.items()}, (starts, direction)


def _check_edges(index: Graph, stored: _StoredEdges, window: Window | None) -> None:
    edges = FieldEdges(index, window)
    expected = naive_edges(stored)
    for dataset in DATASET_IDS:
        nodes = edges.fields.nodes_of(edges.datasets([dataset]))
        for end in ("source", "target"):
            found = edges.as_edges(edges.edges_at(nodes, end))
            wanted = [e for e in expected if getattr(e, end)[0] == dataset]
            assert _hashable(found) == _hashable(wanted), (dataset, end)
        ends = {
            f
            for e in stored.rows
            for side in ("source", "target")
            if getattr(e, f"{side}_dataset_id") == dataset
            and (f := getattr(e, f"{side}_field")) is not None
        }
        assert {f for _, f in edges.keys(edges.ends_on(edges.datasets([dataset])))} == ends


def naive_among(stored: _StoredEdges, datasets: Collection[uuid.UUID]) -> set[EdgeKey]:
    """The field -> field edges between two of `datasets` (deleted ones too)."""
    return {
        (str(e.source_dataset_id), e.source_field, str(e.target_dataset_id), e.target_field)
        for e in stored.field_to_field()
        if e.source_dataset_id in datasets and e.target_dataset_id in datasets
    }


def _check_one_sided(
    store: Store, windows: tuple[Window, Window], stored: tuple[_StoredEdges, _StoredEdges]
) -> None:
    """A diff's field edges: for two sides (windows, and some datasets each), the edges of
    each that the other lacks, as the stored rows of each window (`stored`) say."""
    for first in range(1, len(DATASET_IDS) + 1):
        for last in range(len(DATASET_IDS)):
            datasets = (DATASET_IDS[:first], DATASET_IDS[last:])
            sides = tuple(
                Side([str(d) for d in among], window)
                for among, window in zip(datasets, windows, strict=True)
            )
            with store.read() as conn:
                found = one_sided_edges(conn, (sides[0], sides[1]))
            edges = [naive_among(s, among) for s, among in zip(stored, datasets, strict=True)]
            assert set(found[0]) == edges[0] - edges[1], datasets
            assert set(found[1]) == edges[1] - edges[0], datasets
            assert all(len(f) == len(set(f)) for f in found)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=_graphs())
def test_index_field_answers_equal_the_naive_walk(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[bool], list[str]]
) -> None:
    store = _store(fresh, graph)
    with store.read() as conn:
        index = graph_of(conn)
    # Each window's stored edges are read once: the pairs of windows below reuse them.
    stored = [_StoredEdges(store, window) for window in WINDOWS]
    for window, in_window in zip(WINDOWS, stored, strict=True):
        _check_walks(index, in_window, window)
        _check_edges(index, in_window, window)
    _check_edges(index, _StoredEdges(store, None), None)
    for before, before_stored in zip(WINDOWS, stored, strict=True):
        for after, after_stored in zip(WINDOWS, stored, strict=True):
            _check_one_sided(store, (before, after), (before_stored, after_stored))


def test_a_declaration_restated_at_the_same_time_replaces_its_field_edges(store: Store) -> None:
    """A second JobEvent at the same event time replaces the declaration (its id stays): the
    index, brought forward between the two, shows only the second one's edges as of then."""
    job, at = (NS, "j0"), _when(5)

    def declare(source_field: str) -> None:
        facet = column_lineage({"a": [(NS, "d0", source_field)]})
        event = job_event(job, time=at, outputs=[ds(NS, "d1", columnLineage=facet)])
        ingest_documents(store, [event], batch=False)

    declare("b")
    as_of = Window(_when(-1), _when(60), as_of=_when(10))
    with store.read() as conn:
        first = field_reach(graph_of(conn), [(DATASET_IDS[1], "a")], "upstream", 1, as_of)
    assert first == {(DATASET_IDS[0], "b"): {"columnLineage"}}
    declare("c")
    with store.read() as conn:
        index = graph_of(conn)
    for window in (as_of, Window(_when(-1), _when(60))):
        reach = field_reach(index, [(DATASET_IDS[1], "a")], "upstream", 1, window)
        assert reach == {(DATASET_IDS[0], "c"): {"columnLineage"}}, window


def test_a_set_s_links_are_read_once_however_many_edges_it_holds(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which edges count is a question about their sets: a run stating nine field edges in
    one set has that set's links read once, not once per edge (a diff counts the field
    edges among a thousand datasets twice)."""
    _store_d0_to_d1(store, {out: [(NS, "d0", f) for f in FIELDS] for out in FIELDS})
    with store.read() as conn:
        edges = FieldEdges(graph_of(conn), Window(_when(-1), _when(60)))
    rows = edges.between(edges.datasets(DATASET_IDS[:2]))
    asked: list[int] = []
    by_set = edges.fields.links_by_set
    rows_of = by_set.rows_of

    def counting(sets: Any) -> Any:
        asked.append(len(sets))
        return rows_of(sets)

    monkeypatch.setattr(by_set, "rows_of", counting)
    assert edges.counted(rows).tolist() == [True] * 9
    assert asked == [1]


def test_a_walks_fields_are_numbered_together(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field walk's frontier (a thousand fields at a deep level of the Marquez column
    graph) is turned into node numbers by one look-up of its datasets and one of its
    fields, not a numbering's look-up per field; unknown datasets and fields hold none."""
    from upstream.query.graph_index.numbering import Numbering

    _store_d0_to_d1(store, {"a": [(NS, "d0", "b"), (NS, "d0", "c")]})
    with store.read() as conn:
        edges = FieldEdges(graph_of(conn), None)

    def one_by_one(self: Numbering, text: str) -> int | None:
        raise AssertionError(f"{text!r} looked up alone")

    monkeypatch.setattr(Numbering, "known", one_by_one)
    keys = [
        (DATASET_IDS[1], "a"),
        (DATASET_IDS[0], "c"),
        (DATASET_IDS[0], "b"),
        (DATASET_IDS[0], "c"),
        (DATASET_IDS[0], "absent"),
        (DATASET_IDS[3], "a"),
    ]
    nodes = edges.nodes(keys)
    assert nodes.tolist() == sorted(set(nodes.tolist()))
    assert len(nodes) == 3
    assert set(edges.keys(nodes)) == set(keys[:3])


def _store_d0_to_d1(store: Store, fields: dict[str, list[tuple[str, str, str]]]) -> None:
    """One run of j0 reading d0 and writing d1 whose `columnLineage` states `fields` (each
    output field's input fields)."""
    run = run_event(
        (NS, "j0"),
        time=_when(5),
        inputs=[ds(NS, "d0")],
        outputs=[ds(NS, "d1", columnLineage=column_lineage(fields))],
    )
    ingest_documents(store, [run], batch=False)
