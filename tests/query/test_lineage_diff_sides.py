"""Lineage diffs compared from the two walks' rows (`upstream.query.diff_sides`): the edge
cases of a diff, each worked out by hand from the events, on both stores."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, column_lineage, ds, hours, run_event
from tests.conftest import post
from tests.query.test_lineage_diff import NS, WEEK_1, WEEK_2, diff, on_day, relation

NOTHING: dict[str, list[Any]] = {"relations": [], "fieldEdges": [], "data": [], "programs": []}


def read_as(component: str | None) -> dict[str, Any]:
    """Dataset `a` read through the component `component` (None: through none)."""
    source = ds(NS, "a")
    if component is not None:
        source["inputFacets"] = {"upstream_component": {"name": component}}
    return source


def test_the_same_lineage_on_both_sides_is_an_empty_diff(client: TestClient) -> None:
    facet = column_lineage({"total": [(NS, "a", "net")]})
    post(
        client,
        *(
            run_event(
                (NS, "build"),
                time=on_day(day) + hours(i),
                inputs=[ds(NS, "a")],
                outputs=[ds(NS, "x", columnLineage=facet)],
            )
            for day in (0, 10)
            for i in range(1 + int(day > 0))
        ),
    )
    body = diff(client, "x", direction="upstream", **{"from": WEEK_1, "to": WEEK_2})
    assert body["added"] == body["removed"] == NOTHING
    # One run on day 0, two on day 10.
    assert body["kept"] == [
        relation("a", "build", "read", {"from": 1, "to": 2}),
        relation("x", "build", "write", {"from": 1, "to": 2}),
    ]
    assert sorted(body["data"]) == [f"dataset.{NS}.a", f"dataset.{NS}.x"]
    assert "truncated" not in body


def test_a_run_on_a_window_boundary_is_on_the_side_whose_window_it_overlaps(
    client: TestClient,
) -> None:
    # The first window is [day 0 - 1h, day 1]; a run that starts exactly at its end is not in
    # it (a window holds the runs that start before its end), one that ends at its start is.
    first_end = on_day(1)
    post(
        client,
        run_event((NS, "late"), time=first_end, inputs=[ds(NS, "x")], outputs=[ds(NS, "y")]),
        run_event(
            (NS, "early"),
            time=BASE_TIME - hours(1),
            inputs=[ds(NS, "x")],
            outputs=[ds(NS, "z")],
        ),
        run_event((NS, "late"), time=on_day(10), inputs=[ds(NS, "x")], outputs=[ds(NS, "y")]),
    )
    body = diff(client, "x", direction="downstream", **{"from": WEEK_1, "to": WEEK_2})
    assert body["added"] == {
        "relations": [
            relation("x", "late", "read", 1),
            relation("y", "late", "write", 1),
        ],
        "fieldEdges": [],
        "data": [f"dataset.{NS}.y"],
        "programs": [f"job.{NS}.late"],
    }
    assert body["removed"] == {
        "relations": [
            relation("x", "early", "read", 1),
            relation("z", "early", "write", 1),
        ],
        "fieldEdges": [],
        "data": [f"dataset.{NS}.z"],
        "programs": [f"job.{NS}.early"],
    }
    assert body["kept"] == []


def test_a_deleted_dataset_leaves_both_sides(client: TestClient) -> None:
    post(
        client,
        run_event(
            (NS, "build"), time=on_day(0), inputs=[ds(NS, "a"), ds(NS, "b")], outputs=[ds(NS, "x")]
        ),
        run_event((NS, "build"), time=on_day(10), inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]),
    )
    assert client.delete(f"/api/v1/namespaces/{NS}/datasets/b").status_code == 200
    body = diff(client, "x", direction="upstream", **{"from": WEEK_1, "to": WEEK_2})
    # b is deleted now: neither side shows it, so the diff does not say it was removed.
    assert body["added"] == body["removed"] == NOTHING
    assert sorted(body["data"]) == [f"dataset.{NS}.a", f"dataset.{NS}.x"]
    assert [k["data"] for k in body["kept"]] == [f"dataset.{NS}.a", f"dataset.{NS}.x"]


def test_an_edge_on_one_side_between_datasets_on_both(client: TestClient) -> None:
    facet = column_lineage({"total": [(NS, "a", "net")]})
    post(
        client,
        run_event((NS, "build"), time=on_day(0), inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]),
        run_event(
            (NS, "build"),
            time=on_day(10),
            inputs=[ds(NS, "a")],
            outputs=[ds(NS, "x", columnLineage=facet)],
        ),
    )
    body = diff(client, "x", direction="upstream", **{"from": WEEK_1, "to": WEEK_2})
    assert body["added"] == {
        **NOTHING,
        "fieldEdges": [
            {
                "source": {"namespace": NS, "name": "a", "field": "net"},
                "target": {"namespace": NS, "name": "x", "field": "total"},
            }
        ],
    }
    assert body["removed"] == NOTHING
    assert len(body["kept"]) == 2


def test_components_are_part_of_a_relation_and_collapse_into_a_list(client: TestClient) -> None:
    post(
        client,
        run_event((NS, "build"), time=on_day(0), inputs=[read_as(None)], outputs=[ds(NS, "x")]),
        run_event((NS, "build"), time=on_day(0.5), inputs=[read_as("raw")], outputs=[ds(NS, "x")]),
        run_event((NS, "build"), time=on_day(10), inputs=[read_as("raw")], outputs=[ds(NS, "x")]),
        run_event(
            (NS, "build"), time=on_day(10.5), inputs=[read_as("clean")], outputs=[ds(NS, "x")]
        ),
    )
    windows = {"from": WEEK_1, "to": WEEK_2, "direction": "upstream"}

    def read(components: list[str], runs: Any) -> dict[str, Any]:
        return {**relation("a", "build", "read", runs), "components": components}

    body = diff(client, "x", **windows)
    assert body["added"]["relations"] == [read(["clean"], 1)]
    assert body["removed"]["relations"] == [read([], 1)]
    assert body["kept"] == [
        read(["raw"], {"from": 1, "to": 1}),
        relation("x", "build", "write", {"from": 2, "to": 2}),
    ]
    # Collapsed, the reads of each side are one relation whose components are listed by
    # name: [raw] on day 0, [clean, raw] on day 10, so it is not the same relation.
    merged = diff(client, "x", collapse="component", **windows)
    assert merged["added"]["relations"] == [read(["clean", "raw"], 2)]
    assert merged["removed"]["relations"] == [read(["raw"], 2)]
    assert merged["kept"] == [relation("x", "build", "write", {"from": 2, "to": 2})]


def test_collapsed_accesses_list_read_and_write(client: TestClient) -> None:
    post(
        client,
        run_event((NS, "build"), time=on_day(0), inputs=[ds(NS, "x")], outputs=[ds(NS, "y")]),
        run_event(
            (NS, "build"), time=on_day(10), inputs=[ds(NS, "x")], outputs=[ds(NS, "x"), ds(NS, "y")]
        ),
    )
    body = diff(client, "x", collapse="access", **{"from": WEEK_1, "to": WEEK_2})
    x = {**relation("x", "build", "read", 0), "accesses": ["read", "write"], "runs": 1}
    assert body["added"]["relations"] == [x]
    assert body["removed"]["relations"] == [relation("x", "build", "read", 1)]
    assert body["kept"] == [relation("y", "build", "write", {"from": 1, "to": 1})]


def test_a_rolled_up_diff_compares_workflows(client: TestClient) -> None:
    def step(day: float, source: str) -> list[dict[str, Any]]:
        parent = str(uuid.uuid4())
        return [
            run_event((NS, "flow"), run_id=parent, time=on_day(day)),
            run_event(
                (NS, "flow.step"),
                time=on_day(day),
                inputs=[ds(NS, source)],
                outputs=[ds(NS, "x")],
                parent=((NS, "flow"), parent),
            ),
        ]

    post(client, *step(0, "a"), *step(10, "b"))
    body = diff(
        client, "x", rollup="workflow", direction="upstream", **{"from": WEEK_1, "to": WEEK_2}
    )
    flow = f"workflow.{NS}.flow"
    assert [(r["data"], r["program"]) for r in body["added"]["relations"]] == [
        (f"dataset.{NS}.b", flow)
    ]
    assert [(r["data"], r["program"]) for r in body["removed"]["relations"]] == [
        (f"dataset.{NS}.a", flow)
    ]
    assert [(k["data"], k["program"]) for k in body["kept"]] == [(f"dataset.{NS}.x", flow)]
    assert list(body["programs"]) == [flow]
