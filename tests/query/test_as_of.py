"""Lineage as of a time (design §4.5): runs that had started by then, declarations as they
stood then, on every lineage endpoint."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import (
    BASE_TIME,
    dataset_entry,
    dataset_input,
    ds,
    hours,
    iso,
    job_event,
    lineage_facet,
    run_event,
)
from tests.conftest import new_run_id, post
from upstream.ingest.rebuild import rebuild
from upstream.ingest.service import ingest_documents
from upstream.model.window import Window
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery
from upstream.store import schema as t
from upstream.store.engine import Store

NS = "wh"
#: The declaration history's tables, children first.
HISTORY = (t.declared_flows, t.declared_edges, t.declared_relations, t.declarations)
X = f"/v3/namespaces/{NS}/datasets/x"


def get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def upstream_datasets(body: dict[str, Any]) -> set[str]:
    return {r["data"] for r in body["relations"] if r["accesses"] == ["read"]}


def declaration(time_offset: float, source: str) -> dict[str, Any]:
    """The job's declared lineage: x.c comes from <source>.v."""
    return job_event(
        (NS, "build_x"),
        time=BASE_TIME + hours(time_offset),
        inputs=[ds(NS, source)],
        outputs=[ds(NS, "x")],
        job_facets=lineage_facet(
            dataset_entry(
                NS,
                "x",
                inputs=[dataset_input(NS, source)],
                fields={"c": [dataset_input(NS, source, field="v")]},
            )
        ),
    )


@pytest.fixture(params=["in order", "newest first"])
def redeclared(request: pytest.FixtureRequest, client: TestClient) -> TestClient:
    """build_x declared x <- a at 0h and replaced it by x <- b at 10h, posted in either order
    (a late, older declaration takes its place in the history)."""
    first, second = declaration(0, "a"), declaration(10, "b")
    post(client, *([first, second] if request.param == "in order" else [second, first]))
    return client


def test_dataset_lineage_answers_with_the_declaration_of_then(redeclared: TestClient) -> None:
    now = get(redeclared, X + "/lineage", direction="upstream")
    assert upstream_datasets(now) == {"dataset.wh.b"}
    then = get(redeclared, X + "/lineage", direction="upstream", asOf=iso(BASE_TIME + hours(5)))
    assert upstream_datasets(then) == {"dataset.wh.a"}
    assert then["asOf"] == (BASE_TIME + hours(5)).isoformat()
    # The moment the new declaration was made, it stands.
    at = get(redeclared, X + "/lineage", direction="upstream", asOf=iso(BASE_TIME + hours(10)))
    assert upstream_datasets(at) == {"dataset.wh.b"}
    # Before the first declaration there was no lineage.
    before = get(redeclared, X + "/lineage", asOf=iso(BASE_TIME - hours(1)))
    assert before["relations"] == []


def test_both_directions_see_the_declaration_of_then(redeclared: TestClient) -> None:
    then = get(redeclared, X + "/lineage", asOf=iso(BASE_TIME + hours(5)))
    assert {r["data"] for r in then["relations"]} == {"dataset.wh.a", "dataset.wh.x"}


def test_field_summary_and_fields_as_of(redeclared: TestClient) -> None:
    summary = X + "/lineage/fields/c"
    now = get(redeclared, summary, direction="incoming")
    assert now["incoming"] == [
        {
            "dataset": {"namespace": NS, "name": "b"},
            "fields": ["v"],
            "origins": {"v": ["lineageFacet"]},
        }
    ]
    then = get(redeclared, summary, direction="incoming", asOf=iso(BASE_TIME + hours(5)))
    assert then["incoming"] == [
        {
            "dataset": {"namespace": NS, "name": "a"},
            "fields": ["v"],
            "origins": {"v": ["lineageFacet"]},
        }
    ]
    a_now = get(
        redeclared, f"/v3/namespaces/{NS}/datasets/a/lineage/fields/v", direction="outgoing"
    )
    assert a_now["outgoing"] == []
    fields = get(redeclared, X + "/lineage/fields", asOf=iso(BASE_TIME + hours(5)))
    assert fields == ["c"]


def test_marquez_graph_as_of(redeclared: TestClient) -> None:
    def nodes(**params: Any) -> set[str]:
        body = get(redeclared, "/api/v1/lineage", nodeId=f"dataset:{NS}:x", **params)
        return {n["id"] for n in body["graph"]}

    assert nodes() == {f"dataset:{NS}:x", f"dataset:{NS}:b", f"job:{NS}:build_x"}
    assert nodes(asOf=iso(BASE_TIME + hours(5))) == {
        f"dataset:{NS}:x",
        f"dataset:{NS}:a",
        f"job:{NS}:build_x",
    }


def test_runs_that_started_later_are_not_in_the_answer(client: TestClient) -> None:
    early, late = new_run_id(), new_run_id()
    post(
        client,
        run_event(
            (NS, "early"), run_id=early, time=BASE_TIME, inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]
        ),
        run_event(
            (NS, "late"),
            run_id=late,
            time=BASE_TIME + hours(3),
            inputs=[ds(NS, "b")],
            outputs=[ds(NS, "x")],
        ),
    )
    window = {"start": iso(BASE_TIME - hours(24)), "end": iso(BASE_TIME + hours(24))}
    now = get(client, X + "/lineage", direction="upstream", **window)
    assert upstream_datasets(now) == {"dataset.wh.a", "dataset.wh.b"}
    then = get(
        client, X + "/lineage", direction="upstream", asOf=iso(BASE_TIME + hours(1)), **window
    )
    assert upstream_datasets(then) == {"dataset.wh.a"}
    assert {tuple(r["runs"]) for r in then["relations"]} == {(early,)}


def test_now_in_the_window_means_as_of(client: TestClient) -> None:
    """The default window (now-7d..now) is the week before asOf: the query made then."""
    old = new_run_id()
    post(
        client,
        run_event(
            (NS, "old"), run_id=old, time=BASE_TIME, inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]
        ),
    )
    then = get(client, X + "/lineage", asOf=iso(BASE_TIME + hours(1)))
    assert then["end"] == int((BASE_TIME + hours(1)).timestamp())
    assert then["start"] == int((BASE_TIME + hours(1 - 24 * 7)).timestamp())
    assert {r["data"] for r in then["relations"]} == {"dataset.wh.a", "dataset.wh.x"}
    # Eight days later the run is out of the default window.
    later = get(client, X + "/lineage", asOf=iso(BASE_TIME + hours(24 * 8)))
    assert later["relations"] == []


def read_through(component: str, time_offset: float) -> dict[str, Any]:
    """build_x's declaration: it reads a through `component` and writes x."""
    source = ds(NS, "a")
    source["inputFacets"] = {"upstream_component": {"name": component}}
    return job_event(
        (NS, "build_x"),
        time=BASE_TIME + hours(time_offset),
        inputs=[source],
        outputs=[ds(NS, "x")],
    )


@pytest.mark.parametrize("collapsed", [[], ["component"]])
def test_components_of_declared_relations_are_those_of_then(
    client: TestClient, collapsed: list[str]
) -> None:
    """build_x read a through its mapper (declared at 0h), then through its reducer (10h):
    as of 5h the read of a is the mapper's, with the component lookup as with the walk."""
    post(client, read_through("mapper", 0), read_through("reducer", 10))

    def relations(**params: Any) -> list[tuple[str, list[str], list[str]]]:
        body = get(client, X + "/lineage", direction="upstream", collapse=collapsed, **params)
        return [(r["data"], r["accesses"], r["components"]) for r in body["relations"]]

    assert relations() == [
        ("dataset.wh.a", ["read"], ["reducer"]),
        ("dataset.wh.x", ["write"], []),
    ]
    assert relations(asOf=iso(BASE_TIME + hours(5))) == [
        ("dataset.wh.a", ["read"], ["mapper"]),
        ("dataset.wh.x", ["write"], []),
    ]


@pytest.mark.parametrize(
    "path",
    [
        X + "/lineage",
        X + "/lineage/fields",
        X + "/lineage/fields/c",
        X + "/lineage/fields/c/operations",
        X + "/fields/c/lineage",
        "/api/v1/lineage",
        "/api/v1/column-lineage",
        "/v3/lineage/graph",
    ],
)
def test_a_bad_as_of_is_refused_by_name(redeclared: TestClient, path: str) -> None:
    response = redeclared.get(path, params={"asOf": "last tuesday", "nodeId": f"dataset:{NS}:x"})
    assert response.status_code == 400
    assert "asOf" in response.text


def test_window_until_includes_runs_that_started_at_that_time() -> None:
    window = Window.until(BASE_TIME)
    assert window.as_of == BASE_TIME
    assert window.start < BASE_TIME < window.end


def test_column_lineage_and_the_whole_graph_as_of(redeclared: TestClient) -> None:
    then = {"asOf": iso(BASE_TIME + hours(5))}

    def columns(**params: Any) -> set[str]:
        body = get(redeclared, "/api/v1/column-lineage", nodeId=f"dataset:{NS}:x", **params)
        return {n["id"] for n in body["graph"]}

    assert columns() == {f"datasetField:{NS}:x:c", f"datasetField:{NS}:b:v"}
    assert columns(**then) == {f"datasetField:{NS}:x:c", f"datasetField:{NS}:a:v"}

    def flows(**params: Any) -> set[tuple[str, str]]:
        body = get(redeclared, "/v3/lineage/graph", **params)
        return {(f["source"], f["target"]) for f in body["flows"]}

    assert flows() == {("dataset.wh.b", "dataset.wh.x")}
    assert flows(**then) == {("dataset.wh.a", "dataset.wh.x")}


def test_a_rebuild_records_every_declaration_its_events_made(store: Store) -> None:
    """The history is derived from the raw events: a store whose history is empty (built by
    earlier rules) gets every declaration back, the replaced one included."""
    ingest_documents(store, [declaration(0, "a"), declaration(10, "b")], batch=False)
    store.write(lambda conn: [conn.execute(table.delete()) for table in HISTORY])
    rebuild(store)
    with store.read() as conn:
        history = conn.execute(
            sa.select(t.declarations.c.declared_at, t.declarations.c.replaced_at).order_by(
                t.declarations.c.declared_at
            )
        ).all()
    assert [tuple(row) for row in history] == [
        (BASE_TIME, BASE_TIME + hours(10)),
        (BASE_TIME + hours(10), None),
    ]
    for hour, source in ((5, "a"), (11, "b")):
        asked = LineageQuery(direction="upstream", as_of=iso(BASE_TIME + hours(hour)))
        params = LineageParams.parse(asked, max_levels=10)
        with store.read() as conn:
            body = dataset_lineage(conn, NS, "x", params, max_nodes=100, max_relations=1000)
        assert upstream_datasets(body) == {f"dataset.wh.{source}"}
