"""The property of design §5, over random graphs and random scopes: no node outside the
scopes appears in a lineage answer, and the visible part of a walk is the walk of the graph
with the hidden nodes removed.

Each example stores one random graph twice, in namespaces of its own: whole (`full-dN`), and
without what the scopes hide (`cut-dN`: the runs of hidden jobs left out, hidden datasets
taken out of the others' inputs and outputs). The scoped walk of the whole graph must show
exactly what the full walk of the cut graph shows."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from tests.builders import column_lineage, ds, run_event, schema_facet
from upstream.api.app import create_app
from upstream.model.access import EVERYTHING, Visibility
from upstream.model.keys import parse_entity_key
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery
from upstream.query.marquez.lineage import lineage_graph as marquez_graph
from upstream.query.whole_graph import lineage_graph
from upstream.settings import Settings
from upstream.store.engine import Store

DOMAINS, DATASETS, JOBS = 3, 6, 4
_EXAMPLE = itertools.count()


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    """Datasets and jobs each in one of three domains, each job with one run reading and
    writing some datasets; the domains a reader may see; a direction and a seed."""
    dataset_domains = draw(
        st.lists(st.integers(0, DOMAINS - 1), min_size=DATASETS, max_size=DATASETS)
    )
    job_domains = draw(st.lists(st.integers(0, DOMAINS - 1), min_size=JOBS, max_size=JOBS))
    some = st.sets(st.integers(0, DATASETS - 1), max_size=3)
    runs = [(draw(some), draw(some)) for _ in range(JOBS)]
    return {
        "datasets": dataset_domains,
        "jobs": job_domains,
        "runs": runs,
        "visible": draw(st.sets(st.integers(0, DOMAINS - 1), min_size=1)),
        "wildcard": draw(st.booleans()),
        "direction": draw(st.sampled_from(["both", "upstream", "downstream"])),
        "seed": draw(st.integers(0, DATASETS - 1)),
        "levels": draw(st.integers(1, 4)),
    }


@pytest.fixture
def sqlite_server(tmp_path: Path, sqlite_template: Path) -> Iterator[tuple[TestClient, Store]]:
    import shutil

    path = tmp_path / "property.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    store = Store(url)
    with TestClient(create_app(Settings(db_url=url), migrate=False)) as client:
        yield client, store
    store.dispose()


def _events(
    graph: dict[str, Any], prefix: str, cut: bool, *, fields: bool = False, kind: str = ""
) -> list[dict[str, Any]]:
    """The graph's events in namespaces `{prefix}{kind}-dN` (`kind` by default `full` or
    `cut`); cut, without what the scopes hide. With `fields`, every dataset has the field
    `f`, and each output's `f` is made from each input's (columnLineage). Field walks consult
    datasets only, so a cut for them (`kind="fcut"`) keeps the hidden jobs' runs."""
    kind = kind or ("cut" if cut else "full")
    keep_jobs = kind == "fcut"

    def namespace(domain: int) -> str:
        return f"{prefix}{kind}-d{domain}"

    def shown(domain: int) -> bool:
        return not cut or domain in graph["visible"]

    def dataset(d: int, made_from: list[int] | None = None) -> dict[str, Any]:
        if not fields:
            return ds(namespace(graph["datasets"][d]), f"x{d}")
        facets: dict[str, Any] = {"schema": schema_facet(("f", "string"))}
        if made_from:
            sources = [(namespace(graph["datasets"][i]), f"x{i}", "f") for i in made_from]
            facets["columnLineage"] = column_lineage({"f": sources})
        return ds(namespace(graph["datasets"][d]), f"x{d}", **facets)

    events = []
    for job, (reads, writes) in enumerate(graph["runs"]):
        if not (keep_jobs or shown(graph["jobs"][job])) or not (reads or writes):
            continue
        read = [d for d in sorted(reads) if shown(graph["datasets"][d])]
        written = [d for d in sorted(writes) if shown(graph["datasets"][d])]
        events.append(
            run_event(
                (namespace(graph["jobs"][job]), f"j{job}"),
                run_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{prefix}{kind}/{job}")),
                inputs=[dataset(d) for d in read],
                outputs=[dataset(d, read) for d in written],
            )
        )
    return events


def _relations(answer: dict[str, Any], kind: str) -> set[tuple[str, str, tuple[str, ...], int]]:
    """The relations, with the store's kind of namespace (`full`/`cut`) taken out of keys."""
    return {
        (
            r["data"].replace(kind, "*"),
            r["program"].replace(kind, "*"),
            tuple(r["accesses"]),
            len(r["runs"]),
        )
        for r in answer["relations"]
    }


@examples(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_a_scoped_walk_is_the_walk_of_the_graph_without_the_hidden_nodes(
    sqlite_server: tuple[TestClient, Store], graph: dict[str, Any]
) -> None:
    client, store = sqlite_server
    prefix = f"e{next(_EXAMPLE)}"
    for cut in (False, True):
        events = _events(graph, prefix, cut)
        if events:
            assert client.post("/api/v1/lineage", json=events).status_code == 201
    domain = graph["datasets"][graph["seed"]]
    seed = f"x{graph['seed']}"
    patterns = tuple(
        f"{prefix}full-d{d}" + ("*" if graph["wildcard"] else "") for d in graph["visible"]
    )
    visibility = Visibility(patterns)
    query = LineageQuery(
        start="0", end="now", direction=graph["direction"], levels=str(graph["levels"])
    )
    params = LineageParams.parse(query, max_levels=100)
    caps = {"max_nodes": 10**6, "max_relations": 10**6}
    with store.read() as conn:
        cut_answer = _answer(conn, f"{prefix}cut-d{domain}", seed, params, EVERYTHING, caps)
        scoped = _answer(conn, f"{prefix}full-d{domain}", seed, params, visibility, caps)
    if domain not in graph["visible"] or cut_answer is None:
        # Hidden, or touched by no visible job: not found, or found with nothing around it.
        assert scoped is None or scoped["relations"] == []
        return
    assert scoped is not None
    for key in [*scoped["data"], *scoped["programs"]]:
        assert visibility.shows(parse_entity_key(key)[1]), key
    assert _relations(scoped, "full") == _relations(cut_answer, "cut")
    assert (scoped["hiddenNodes"] == 0) == (scoped["hiddenRelations"] == 0)


def _answer(
    conn: Any,
    namespace: str,
    name: str,
    params: LineageParams,
    visibility: Visibility,
    caps: dict[str, int],
) -> dict[str, Any] | None:
    from upstream.model.errors import NotFound

    try:
        return dict(dataset_lineage(conn, namespace, name, params, visibility=visibility, **caps))
    except NotFound:
        return None


def _graph_part(answer: dict[str, Any], namespaces: str, kind: str) -> dict[str, Any]:
    """The flows and programs of a whole-graph answer among `namespaces` (a prefix), with
    the store's kind of namespace taken out of keys."""

    def key(value: str | None) -> str | None:
        return None if value is None else value.replace(kind, "*")

    return {
        "flows": {
            (key(f["source"]), key(f["target"]), key(f["program"]), f["runs"], f["inferred"])
            for f in answer["flows"]
            if namespaces in f["source"]
        },
        "programs": {key(p) for p in answer["programs"] if namespaces in p},
    }


@examples(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_the_scoped_whole_graph_is_the_graph_without_the_hidden_nodes(
    sqlite_server: tuple[TestClient, Store], graph: dict[str, Any]
) -> None:
    """The whole graph (`GET /v3/lineage/graph`) a scoped reader gets shows exactly the
    flows and programs of the graph stored without what it hides, and nothing else."""
    client, store = sqlite_server
    prefix = f"g{next(_EXAMPLE)}"
    for cut in (False, True):
        events = _events(graph, prefix, cut)
        if events:
            assert client.post("/api/v1/lineage", json=events).status_code == 201
    patterns = tuple(
        f"{prefix}full-d{d}" + ("*" if graph["wildcard"] else "") for d in graph["visible"]
    )
    visibility = Visibility(patterns)
    with store.read() as conn:
        scoped = dict(lineage_graph(conn, visibility=visibility))
        cut = dict(lineage_graph(conn))
    for key in [*scoped["data"], *scoped["programs"]]:
        assert visibility.shows(parse_entity_key(key)[1]), key
    assert _graph_part(scoped, f"{prefix}full-", "full") == _graph_part(cut, f"{prefix}cut-", "cut")
    assert (scoped["hiddenNodes"] == 0) == (scoped["hiddenRelations"] == 0)


def _marquez_part(
    conn: Any, node: str, kind: str, visibility: Visibility
) -> tuple[set[str], set[tuple[str, str]]] | None:
    """The node ids and edges of the Marquez graph around `node`, with the store's kind of
    namespace taken out; None when the node is not found."""
    from upstream.model.errors import NotFound

    try:
        answer = marquez_graph(conn, node, 20, 10**6, None, visibility)
    except NotFound:
        return None
    nodes = {n["id"].replace(kind, "*") for n in answer["graph"]}
    edges = {
        (e["origin"].replace(kind, "*"), e["destination"].replace(kind, "*"))
        for n in answer["graph"]
        for e in n["outEdges"]
    }
    for n in answer["graph"]:
        assert visibility.shows(n["data"]["namespace"]), n["id"]
    return nodes, edges


@examples(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_the_scoped_marquez_graph_is_the_graph_without_the_hidden_nodes(
    sqlite_server: tuple[TestClient, Store], graph: dict[str, Any]
) -> None:
    """Marquez's lineage graph (`GET /api/v1/lineage`) around a dataset a scoped reader may
    see holds exactly the nodes and edges of the graph stored without what it hides."""
    client, store = sqlite_server
    prefix = f"m{next(_EXAMPLE)}"
    for cut in (False, True):
        events = _events(graph, prefix, cut)
        if events:
            assert client.post("/api/v1/lineage", json=events).status_code == 201
    domain = graph["datasets"][graph["seed"]]
    patterns = tuple(
        f"{prefix}full-d{d}" + ("*" if graph["wildcard"] else "") for d in graph["visible"]
    )
    visibility = Visibility(patterns)
    seed = f"x{graph['seed']}"
    with store.read() as conn:
        scoped = _marquez_part(conn, f"dataset:{prefix}full-d{domain}:{seed}", "full", visibility)
        cut = _marquez_part(conn, f"dataset:{prefix}cut-d{domain}:{seed}", "cut", EVERYTHING)
    if domain not in graph["visible"]:
        assert scoped is None
    elif cut is None:
        # Stored only through hidden jobs: the dataset alone, or not stored at all.
        assert scoped is None or scoped == ({f"dataset:{prefix}*-d{domain}:{seed}"}, set())
    else:
        assert scoped == cut


def _column_nodes(conn: Any, node: str, kind: str, visibility: Visibility, depth: int) -> Any:
    """The field node ids and edges of Marquez's column lineage around `node` (both ways),
    with the store's kind of namespace taken out; None when the node is not found."""
    from upstream.model.errors import NotFound
    from upstream.query.marquez.columns import column_lineage as column_graph

    try:
        answer = column_graph(conn, node, depth, True, 10**6, None, visibility)
    except NotFound:
        return None
    for n in answer["graph"]:
        assert visibility.shows(n["data"]["namespace"]), n["id"]
    if not visibility.everything:
        assert (answer["hiddenNodes"] == 0) == (answer["hiddenRelations"] == 0)
    nodes = {n["id"].replace(kind, "*") for n in answer["graph"]}
    edges = {
        (e["origin"].replace(kind, "*"), e["destination"].replace(kind, "*"))
        for n in answer["graph"]
        for e in n["outEdges"]
    }
    return nodes, edges


def _impact_rows(
    conn: Any, namespace: str, name: str, kind: str, visibility: Visibility, levels: int
) -> list[tuple[str, str, str | None, int | None]] | None:
    """The rows of the impact report of dataset `namespace`:`name` as (kind, dataset key,
    field, hops), the store's kind of namespace taken out; None when it is not found."""
    from upstream.model.errors import NotFound
    from upstream.query.impact import dataset_impact

    query = LineageQuery(start="0", end="now", levels=str(levels))
    params = LineageParams.parse(query, max_levels=100)
    try:
        answer = dataset_impact(
            conn,
            namespace,
            name,
            params,
            max_nodes=10**6,
            max_relations=10**6,
            visibility=visibility,
        )
    except NotFound:
        return None
    for row in answer["rows"]:
        assert visibility.shows(row["namespace"]), row
        assert all(visibility.shows(job["namespace"]) for job in row["jobs"]), row
    return sorted(
        (
            row["kind"],
            f"{row['namespace'].replace(kind, '*')}:{row['name']}",
            row["field"],
            row["hops"],
        )
        for row in answer["rows"]
    )


@examples(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_scoped_field_walks_are_the_walks_of_the_graph_without_the_hidden_datasets(
    sqlite_server: tuple[TestClient, Store], graph: dict[str, Any]
) -> None:
    """Marquez's column lineage around a dataset, and the impact report of a dataset, that a
    scoped reader gets: the column graph is that of the graph stored without the hidden
    datasets (field walks consult datasets only: no field answer names a job); the impact
    report's field rows are too, and its dataset rows are those of the graph stored without
    the hidden datasets and jobs (its dataset walk is the dataset lineage's)."""
    client, store = sqlite_server
    prefix = f"f{next(_EXAMPLE)}"
    for kind in ("full", "cut", "fcut"):
        events = _events(graph, prefix, kind != "full", fields=True, kind=kind)
        if events:
            assert client.post("/api/v1/lineage", json=events).status_code == 201
    domain = graph["datasets"][graph["seed"]]
    patterns = tuple(
        f"{prefix}full-d{d}" + ("*" if graph["wildcard"] else "") for d in graph["visible"]
    )
    visibility = Visibility(patterns)
    seed, levels = f"x{graph['seed']}", graph["levels"]

    def node(kind: str) -> str:
        return f"dataset:{prefix}{kind}-d{domain}:{seed}"

    def impact(kind: str, shown_to: Visibility) -> Any:
        return _impact_rows(conn, f"{prefix}{kind}-d{domain}", seed, kind, shown_to, levels)

    with store.read() as conn:
        scoped_columns = _column_nodes(conn, node("full"), "full", visibility, levels)
        cut_columns = _column_nodes(conn, node("fcut"), "fcut", EVERYTHING, levels)
        scoped_impact = impact("full", visibility)
        field_cut_impact = impact("fcut", EVERYTHING)
        cut_impact = impact("cut", EVERYTHING)
    if domain not in graph["visible"]:
        assert scoped_columns is None
        assert scoped_impact is None
        return
    assert scoped_columns == cut_columns
    if scoped_impact is None:
        # Named by no event: unknown in both stores.
        assert field_cut_impact is None
        return
    assert field_cut_impact is not None
    assert [r for r in scoped_impact if r[0] == "field"] == [
        r for r in field_cut_impact if r[0] == "field"
    ]
    scoped_datasets = [r for r in scoped_impact if r[0] == "dataset"]
    assert scoped_datasets == [r for r in cut_impact or [] if r[0] == "dataset"]
