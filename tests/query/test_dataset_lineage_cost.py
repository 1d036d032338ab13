"""The dataset lineage walk costs a constant number of statements per level, whatever the
width of the level (design §4.2, issue 3 item 6): never one per dataset or job."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, run_event
from tests.query.test_dataset_lineage import DAY, NS, post, rid, run
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import IdTexts
from upstream.query.lineage_params import LineageParams
from upstream.store.engine import Store


def fan(client: TestClient, width: int, tag: str) -> None:
    """S -P- A_k -Q_k- B_k -R_k- C_k -Y- Z for k < width; each Q_k runs inside a workflow
    run."""
    events = [run(f"{tag}P", rid(), reads=[f"{tag}S"], writes=[f"{tag}A{k}" for k in range(width)])]
    for k in range(width):
        parent = ((NS, f"{tag}wf{k}"), rid())
        events.append(
            run(f"{tag}Q{k}", rid(), reads=[f"{tag}A{k}"], writes=[f"{tag}B{k}"], parent=parent)
        )
        events.append(run(f"{tag}R{k}", rid(), reads=[f"{tag}B{k}"], writes=[f"{tag}C{k}"]))
    events.append(
        run(f"{tag}Y", rid(), reads=[f"{tag}C{k}" for k in range(width)], writes=[f"{tag}Z"])
    )
    post(client, *events)


def bring_index_up_to_date(store: Store) -> None:
    """Load the process's graph index and apply the writes made so far: a cost once per
    process and once per change, not per walk (design §6)."""
    with store.read() as conn:
        graph_of(conn)


OPTIONS: list[dict[str, Any]] = [
    {},
    {"direction": "downstream"},
    {"direction": "upstream"},
    {"direction": "upstream", "rollup": "workflow"},
    {"rollup": "workflow"},
    {"rollup": "workflow", "direction": "downstream"},
    {"collapse": frozenset({"run"})},
]


def test_statements_do_not_grow_with_width(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    store, found = statements
    fan(client, 1, "narrow")
    fan(client, 25, "wide")
    bring_index_up_to_date(store)
    for options in OPTIONS:
        params = LineageParams(
            start=BASE_TIME - DAY, end=BASE_TIME + DAY, **{"levels": 3, **options}
        )
        costs = {}
        sizes = {}
        for tag in ("narrow", "wide"):
            seed = f"{tag}Z" if options.get("direction") == "upstream" else f"{tag}S"
            found.clear()
            with store.read() as conn:
                body = dataset_lineage(conn, NS, seed, params, max_nodes=5000, max_relations=50_000)
            costs[tag] = len(found)
            sizes[tag] = len(body["data"]) + len(body["programs"])
        assert costs["wide"] == costs["narrow"], options
        assert sizes["wide"] > sizes["narrow"], options


def chain(client: TestClient, length: int) -> None:
    """S0 -J1- S1 -J2- ... S<length>, each step a run of its own job; every third run (the
    first and the last among them) is inside a workflow run of its own, so workflows are
    met at every depth."""
    events = []
    for k in range(1, length + 1):
        parent = ((NS, f"chain-wf{k}"), rid()) if k % 3 == 1 else None
        events.append(
            run(f"chainJ{k}", rid(), reads=[f"chainS{k - 1}"], writes=[f"chainS{k}"], parent=parent)
        )
    post(client, *events)


@pytest.mark.parametrize("options", OPTIONS)
def test_statements_do_not_grow_with_depth(
    client: TestClient, statements: tuple[Store, list[str]], options: dict[str, Any]
) -> None:
    """One walk reads what all its levels need up front: as many statements at levels 20
    as at levels 1, though the answer grows with every level (design §6)."""
    store, found = statements
    chain(client, 25)
    bring_index_up_to_date(store)
    seed = "chainS25" if options.get("direction") == "upstream" else "chainS0"
    costs: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for levels in (1, 5, 10, 20):
        params = LineageParams(
            start=BASE_TIME - DAY, end=BASE_TIME + DAY, **{"levels": levels, **options}
        )
        found.clear()
        with store.read() as conn:
            body = dataset_lineage(conn, NS, seed, params, max_nodes=5000, max_relations=50_000)
        costs[levels] = len(found)
        sizes[levels] = len(body["data"])
    assert len(set(costs.values())) == 1, costs
    assert sizes[1] < sizes[5] < sizes[10] < sizes[20], sizes


def test_the_marquez_graph_costs_the_same_at_any_depth(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    from upstream.query.marquez.lineage import lineage_graph

    store, found = statements
    chain(client, 25)
    bring_index_up_to_date(store)
    costs: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for depth in (1, 5, 10, 20):
        found.clear()
        with store.read() as conn:
            body = lineage_graph(conn, f"dataset:{NS}:chainS12", depth, 5000)
        costs[depth] = len(found)
        sizes[depth] = len(body["graph"])
    assert len(set(costs.values())) == 1, costs
    assert sizes[1] < sizes[5] < sizes[10] < sizes[20], sizes


def field_chain(client: TestClient, length: int) -> None:
    """F0.id -> F1.id -> ... -> F<length>.id by columnLineage, one run per step."""
    from tests.builders import column_lineage, ds, run_event

    post(
        client,
        *(
            run_event(
                (NS, f"fieldJ{k}"),
                run_id=rid(),
                inputs=[ds(NS, f"F{k - 1}")],
                outputs=[
                    ds(NS, f"F{k}", columnLineage=column_lineage({"id": [(NS, f"F{k - 1}", "id")]}))
                ],
            )
            for k in range(1, length + 1)
        ),
    )


def test_field_walks_cost_the_same_at_any_depth(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """Field summaries and the Marquez column graph read every hop in one go."""
    from upstream.model.window import Window
    from upstream.query.field_lineage import FieldQuery
    from upstream.query.field_summary import field_summary
    from upstream.query.marquez.columns import column_lineage

    store, found = statements
    field_chain(client, 25)
    bring_index_up_to_date(store)
    window = Window(BASE_TIME - DAY, BASE_TIME + DAY)
    costs: dict[str, dict[int, int]] = {"summary": {}, "columns": {}}
    sizes: dict[str, dict[int, int]] = {"summary": {}, "columns": {}}
    for levels in (1, 5, 10, 20):
        found.clear()
        with store.read() as conn:
            summary = field_summary(conn, NS, "F12", "id", FieldQuery(window, levels, "both"))
        costs["summary"][levels] = len(found)
        sizes["summary"][levels] = sum(
            len(side) for side in (summary["incoming"], summary["outgoing"])
        )
        found.clear()
        with store.read() as conn:
            graph = column_lineage(conn, f"datasetField:{NS}:F12:id", levels, True, 5000)
        costs["columns"][levels] = len(found)
        sizes["columns"][levels] = len(graph["graph"])
    for kind, cost in costs.items():
        assert len(set(cost.values())) == 1, (kind, cost)
        assert sizes[kind][1] < sizes[kind][5] < sizes[kind][10] < sizes[kind][20], sizes


def test_an_answer_names_what_an_earlier_answer_named_without_a_statement(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """A dataset's or job's name is read once per process (its id is the UUIDv5 of that
    name, so it never changes): asked again, the same answer reads no name, and a dataset
    written since is named by one statement that reads it alone."""
    store, found = statements
    chain(client, 3)
    bring_index_up_to_date(store)
    params = LineageParams(start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=5)

    def names_read() -> list[str]:
        found.clear()
        with store.read() as conn:
            body = dataset_lineage(conn, NS, "chainS0", params, max_nodes=50, max_relations=50)
        assert body["data"]
        return [s for s in found if "datasets.name" in s or "jobs.name" in s]

    assert names_read()  # the first answer reads them
    assert names_read() == []
    post(client, run("chainJ4", rid(), reads=["chainS3"], writes=["chainS4"]))
    bring_index_up_to_date(store)
    read = names_read()
    assert len(read) == 2, read  # the new dataset's name, and the new job's
    with store.read() as conn:
        body = dataset_lineage(conn, NS, "chainS0", params, max_nodes=50, max_relations=50)
    assert "dataset.ns.chainS4" in body["data"]
    assert "job.ns.chainJ4" in body["programs"]


class _CountedTexts(IdTexts):
    """A numbering's id texts, counting how many an answer makes."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, slice):
            _CountedTexts.reads += 1
        return super().__getitem__(index)

    def take(self, numbers: Any) -> list[str]:
        _CountedTexts.reads += len(numbers)
        return super().take(numbers)


@pytest.mark.parametrize("collapse", [frozenset(), frozenset({"run"})])
def test_an_answer_names_each_run_once_however_many_relations_it_has(
    client: TestClient, store: Store, collapse: frozenset[Any]
) -> None:
    """Three runs, each reading six datasets and writing one: 21 relations, whose runs are
    made text once each (design §6), not once per relation."""
    post(
        client,
        *(
            run(f"wideJ{k}", rid(), reads=[f"wideIn{i}" for i in range(6)], writes=["wideOut"])
            for k in range(3)
        ),
    )
    params = LineageParams(
        start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=1, direction="upstream"
    )
    with store.read() as conn:
        graph = graph_of(conn)
        # The runs' newest-first order is worked out once per version of the index, for all
        # its runs (`Graph.newest_first`), not per answer.
        _ = graph.newest_first
        runs = graph.ids.runs
        runs.texts = _CountedTexts(runs)
        _CountedTexts.reads = 0
        body = dataset_lineage(
            conn, NS, "wideOut", replace(params, collapse=collapse), max_nodes=50, max_relations=50
        )
    shown = {run for relation in body["relations"] for run in relation["runs"]}
    assert len(shown) == 3
    assert sum(len(relation["runs"]) for relation in body["relations"]) == 21
    assert _CountedTexts.reads == 3


def test_runs_that_started_together_are_listed_by_id(client: TestClient, store: Store) -> None:
    """Newest start first; of two runs that started at the same instant, the smaller id
    first (design §4.2), though only those two are ranked by their ids' text."""
    from datetime import timedelta

    from tests.builders import ds, run_event

    ids = [f"00000000-0000-4000-8000-00000000000{k}" for k in (1, 3, 2)]
    hours = (1, 3, 3)
    post(
        client,
        *(
            run_event(
                (NS, "tieJ"),
                run_id=run_id,
                event_type="START",
                time=BASE_TIME + timedelta(hours=hour),
                inputs=[ds(NS, "tieIn")],
                outputs=[ds(NS, "tieOut")],
            )
            for run_id, hour in zip(ids, hours, strict=True)
        ),
    )
    params = LineageParams(
        start=BASE_TIME - DAY,
        end=BASE_TIME + DAY,
        levels=1,
        direction="upstream",
        collapse=frozenset({"run"}),
    )
    with store.read() as conn:
        body = dataset_lineage(conn, NS, "tieOut", params, max_nodes=50, max_relations=50)
    runs = {relation["accesses"][0]: relation["runs"] for relation in body["relations"]}
    assert runs["write"] == [ids[2], ids[1], ids[0]]


def test_a_read_asks_its_start_and_the_change_log_once(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """What every read costs whatever its size: one statement finds the start dataset (its
    namespace, row, deletion and whether it is an alias) and the change log's position
    (each statement is a round trip); the walk and the answer's names come from the index
    (names read once before)."""
    store, found = statements
    chain(client, 3)
    bring_index_up_to_date(store)
    params = LineageParams(start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=1)
    for _ in range(2):  # the first read reads the names the answer shows
        found.clear()
        with store.read() as conn:
            body = dataset_lineage(conn, NS, "chainS1", params, max_nodes=50, max_relations=50)
    asked = [s for s in found if not s.strip().upper().startswith("BEGIN")]
    assert len(asked) == 1, asked
    assert "dataset_aliases" in asked[0]
    assert "deletions" in asked[0]
    assert "change_log_head" in asked[0]
    assert len(body["relations"]) == 4  # S0 -J1- S1 -J2- S2: a read and a write each


def test_components_are_matched_only_on_datasets_that_name_one(
    client: TestClient, statements: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk matches its relations to the components stored on them only when one of its
    datasets has a named component: most stores name none, and the match costs as much as
    the rest of a deep walk. With one named, the answer shows it."""
    from upstream.query.graph_index import dataset_walk

    store, _ = statements
    built: list[int] = []
    adjacency = dataset_walk.Adjacency

    def counted(*args: Any) -> Any:
        built.append(1)
        return adjacency(*args)

    monkeypatch.setattr(dataset_walk, "Adjacency", counted)
    chain(client, 3)
    bring_index_up_to_date(store)
    params = LineageParams(
        start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=5, direction="downstream"
    )

    def components() -> set[str]:
        with store.read() as conn:
            body = dataset_lineage(conn, NS, "chainS0", params, max_nodes=50, max_relations=50)
        return {c for relation in body["relations"] for c in relation["components"]}

    assert components() == set()
    assert not built
    named = ds(NS, "chainS2")
    named["inputFacets"] = {"upstream_component": {"name": "mapper"}}
    post(client, run_event((NS, "chainJ3"), run_id=rid(), inputs=[named]))
    bring_index_up_to_date(store)
    assert components() == {"mapper"}
    assert built


@pytest.mark.parametrize("direction", ["upstream", "downstream"])
def test_a_walk_asks_no_job_end_edges_of_a_store_without_them(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch, direction: str
) -> None:
    """Most stores have no job-end edge: a directed walk looks none up (three look-ups a
    level, a third of a deep walk's), and answers as before."""
    from upstream.query.graph_index.adjacency import Adjacency

    chain(client, 6)
    bring_index_up_to_date(store)
    with store.read() as conn:
        edges = {id(by) for by in graph_of(conn).edges_by.values()}
    asked: list[int] = []
    rows_of = Adjacency.rows_of

    def counted(self: Adjacency, nodes: Any) -> Any:
        asked.append(id(self))
        return rows_of(self, nodes)

    monkeypatch.setattr(Adjacency, "rows_of", counted)
    seed = "chainS6" if direction == "upstream" else "chainS0"
    params = LineageParams(start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=10)
    params = replace(params, direction=direction)
    with store.read() as conn:
        body = dataset_lineage(conn, NS, seed, params, max_nodes=5000, max_relations=50_000)
    assert len(body["data"]) == 7
    assert asked
    assert not edges & set(asked)
