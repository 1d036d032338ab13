"""Lineage diffs (design §4.5): what changed upstream or downstream of a dataset between two
windows, or between two times. Every expectation is worked out by hand from the events."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    hours,
    iso,
    job_event,
    lineage_facet,
    run_event,
)
from tests.conftest import post
from upstream.query.lineage_diff import DiffParams
from upstream.query.lineage_query import DiffQuery

NS = "wh"
DAY = 24.0
#: Day 0 and day 10, each a window of one day.
WEEK_1 = f"{iso(BASE_TIME - hours(1))}..{iso(BASE_TIME + hours(DAY))}"
WEEK_2 = f"{iso(BASE_TIME + hours(10 * DAY - 1))}..{iso(BASE_TIME + hours(11 * DAY))}"


def diff(client: TestClient, dataset: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v3/namespaces/{NS}/datasets/{dataset}/lineage/diff", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def on_day(day: float) -> Any:
    return BASE_TIME + hours(day * DAY)


def relation(data: str, program: str, access: str, runs: Any) -> dict[str, Any]:
    return {
        "data": f"dataset.{NS}.{data}",
        "program": f"job.{NS}.{program}",
        "accesses": [access],
        "components": [],
        "runs": runs,
    }


def test_a_job_that_started_reading_a_new_source(client: TestClient) -> None:
    post(
        client,
        run_event((NS, "build"), time=on_day(0), inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]),
        *(
            run_event(
                (NS, "build"),
                time=on_day(10) + hours(i),
                inputs=[ds(NS, "a"), ds(NS, "new")],
                outputs=[ds(NS, "x")],
            )
            for i in range(3)
        ),
    )
    body = diff(client, "x", direction="upstream", **{"from": WEEK_1, "to": WEEK_2})
    assert body["added"] == {
        "relations": [relation("new", "build", "read", 3)],
        "fieldEdges": [],
        "data": [f"dataset.{NS}.new"],
        "programs": [],
    }
    assert body["removed"] == {"relations": [], "fieldEdges": [], "data": [], "programs": []}
    # One run in the first window, three in the second.
    assert body["kept"] == [
        relation("a", "build", "read", {"from": 1, "to": 3}),
        relation("x", "build", "write", {"from": 1, "to": 3}),
    ]
    assert body["from"]["start"] == int((BASE_TIME - hours(1)).timestamp())
    assert body["to"]["end"] == int(on_day(11).timestamp())
    assert set(body["data"]) == {f"dataset.{NS}.{n}" for n in ("a", "new", "x")}
    assert body["programs"] == {
        f"job.{NS}.build": {"entityId": {"type": "job", "namespace": NS, "name": "build"}}
    }


def test_a_job_that_stopped_writing_a_table(client: TestClient) -> None:
    post(
        client,
        run_event(
            (NS, "split"),
            time=on_day(0),
            inputs=[ds(NS, "x")],
            outputs=[ds(NS, "y"), ds(NS, "z")],
        ),
        run_event((NS, "split"), time=on_day(10), inputs=[ds(NS, "x")], outputs=[ds(NS, "y")]),
    )
    body = diff(client, "x", direction="downstream", **{"from": WEEK_1, "to": WEEK_2})
    assert body["removed"] == {
        "relations": [relation("z", "split", "write", 1)],
        "fieldEdges": [],
        "data": [f"dataset.{NS}.z"],
        "programs": [],
    }
    assert body["added"]["relations"] == []
    assert [(k["data"], k["runs"]) for k in body["kept"]] == [
        (f"dataset.{NS}.x", {"from": 1, "to": 1}),
        (f"dataset.{NS}.y", {"from": 1, "to": 1}),
    ]


def test_a_column_whose_source_changed(client: TestClient) -> None:
    def build(day: float, field: str) -> dict[str, Any]:
        facet = column_lineage({"total": [(NS, "a", field)]})
        return run_event(
            (NS, "build"),
            time=on_day(day),
            inputs=[ds(NS, "a")],
            outputs=[ds(NS, "x", columnLineage=facet)],
        )

    post(client, build(0, "gross"), build(10, "net"))
    body = diff(client, "x", direction="upstream", **{"from": WEEK_1, "to": WEEK_2})

    def edge(field: str) -> dict[str, Any]:
        return {
            "source": {"namespace": NS, "name": "a", "field": field},
            "target": {"namespace": NS, "name": "x", "field": "total"},
        }

    assert body["added"]["fieldEdges"] == [edge("net")]
    assert body["removed"]["fieldEdges"] == [edge("gross")]
    assert body["added"]["relations"] == body["removed"]["relations"] == []
    assert len(body["kept"]) == 2


def test_as_of_against_compares_the_declarations_of_two_times(client: TestClient) -> None:
    def declare(hour: float, source: str) -> dict[str, Any]:
        return job_event(
            (NS, "declared"),
            time=BASE_TIME + hours(hour),
            inputs=[ds(NS, source)],
            outputs=[ds(NS, "x")],
            job_facets=lineage_facet(dataset_entry(NS, "x", inputs=[dataset_input(NS, source)])),
        )

    post(client, declare(0, "old_source"), declare(10, "new_source"))
    body = diff(
        client,
        "x",
        direction="upstream",
        asOf=iso(BASE_TIME + hours(12)),
        against=iso(BASE_TIME + hours(5)),
    )
    assert body["added"]["relations"] == [relation("new_source", "declared", "read", 0)]
    assert body["removed"]["relations"] == [relation("old_source", "declared", "read", 0)]
    assert body["kept"] == [relation("x", "declared", "write", {"from": 0, "to": 0})]
    assert body["from"]["asOf"] == (BASE_TIME + hours(5)).isoformat()
    assert body["to"]["asOf"] == (BASE_TIME + hours(12)).isoformat()
    # No change between two times after the second declaration.
    same = diff(client, "x", asOf=iso(BASE_TIME + hours(12)), against=iso(BASE_TIME + hours(11)))
    assert same["added"]["relations"] == same["removed"]["relations"] == []


def test_as_of_against_compares_declared_and_observed_field_edges(client: TestClient) -> None:
    def declare(hour: float, field: str) -> dict[str, Any]:
        facet = column_lineage({"total": [(NS, "a", field)]})
        return job_event(
            (NS, "declared"),
            time=BASE_TIME + hours(hour),
            inputs=[ds(NS, "a")],
            outputs=[ds(NS, "x", columnLineage=facet)],
        )

    def build(hour: float, target_field: str, field: str) -> dict[str, Any]:
        facet = column_lineage({target_field: [(NS, "a", field)]})
        return run_event(
            (NS, "build"),
            time=BASE_TIME + hours(hour),
            inputs=[ds(NS, "a")],
            outputs=[ds(NS, "y", columnLineage=facet)],
        )

    post(
        client,
        declare(0, "gross"),
        declare(10, "net"),
        build(1, "total", "gross"),
        build(8, "amount", "net"),
    )
    body = diff(
        client,
        "a",
        direction="downstream",
        asOf=iso(BASE_TIME + hours(12)),
        against=iso(BASE_TIME + hours(5)),
        start=iso(BASE_TIME - hours(1)),
        end=iso(BASE_TIME + hours(13)),
    )

    def edge(field: str, target: str, target_field: str) -> dict[str, Any]:
        return {
            "source": {"namespace": NS, "name": "a", "field": field},
            "target": {"namespace": NS, "name": target, "field": target_field},
        }

    # At hour 5 the first declaration is in force and only the run of hour 1 has started; at
    # hour 12 the second declaration replaced it and the run of hour 8 has started too. The
    # edge of the run of hour 1 is on both sides.
    assert body["added"]["fieldEdges"] == [edge("net", "x", "total"), edge("net", "y", "amount")]
    assert body["removed"]["fieldEdges"] == [edge("gross", "x", "total")]


def test_collapse_access_is_applied_to_both_sides(client: TestClient) -> None:
    post(
        client,
        run_event((NS, "build"), time=on_day(0), inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]),
        run_event((NS, "build"), time=on_day(10), inputs=[ds(NS, "b")], outputs=[ds(NS, "x")]),
    )
    body = diff(client, "x", collapse="access", **{"from": WEEK_1, "to": WEEK_2})
    assert [r["data"] for r in body["added"]["relations"]] == [f"dataset.{NS}.b"]
    assert [r["data"] for r in body["removed"]["relations"]] == [f"dataset.{NS}.a"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "", "to": WEEK_2}, "from"),
        ({"from": "yesterday..today", "to": WEEK_2}, "from"),
        ({"from": WEEK_1, "to": "now-1d"}, "to"),
        ({"from": WEEK_1, "to": f"{iso(on_day(3))}..{iso(on_day(1))}"}, "to"),
        ({"against": "soon"}, "against"),
        ({"asOf": "soon", "against": "now"}, "asOf"),
        ({"asOf": "now", "against": "now", "start": "now+1d"}, "asOf"),
        ({"from": WEEK_1, "start": "now-1d"}, "start"),
        ({"from": WEEK_1, "to": WEEK_2, "asOf": "now"}, "from"),
        ({"from": WEEK_1, "to": WEEK_2, "levels": "0"}, "levels"),
        ({"from": WEEK_1, "to": WEEK_2, "direction": "up"}, "direction"),
    ],
)
def test_bad_parameters_are_refused_by_name(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    post(client, run_event((NS, "build"), time=on_day(0), outputs=[ds(NS, "x")]))
    response = client.get(f"/v3/namespaces/{NS}/datasets/x/lineage/diff", params=params)
    assert response.status_code == 400, response.text
    paths = [e["path"] for e in response.json().get("errors", [])] or [response.json()["message"]]
    assert any(field in path for path in paths), response.text


def test_an_unknown_dataset_is_404(client: TestClient) -> None:
    post(client, run_event((NS, "build"), time=on_day(0), outputs=[ds(NS, "x")]))
    response = client.get(
        f"/v3/namespaces/{NS}/datasets/nope/lineage/diff", params={"from": WEEK_1, "to": WEEK_2}
    )
    assert response.status_code == 404


def test_without_windows_this_week_is_compared_with_the_week_before() -> None:
    params = DiffParams.parse(DiffQuery(), max_levels=10, now=BASE_TIME)
    assert (params.after.start, params.after.end) == (BASE_TIME - hours(7 * DAY), BASE_TIME)
    assert (params.before.start, params.before.end) == (
        BASE_TIME - hours(14 * DAY),
        BASE_TIME - hours(7 * DAY),
    )
    # A `to` window alone is compared with the window of its length just before it.
    only_to = DiffParams.parse(DiffQuery(to_window="now-2d..now"), max_levels=10, now=BASE_TIME)
    assert (only_to.before.start, only_to.before.end) == (
        BASE_TIME - hours(4 * DAY),
        BASE_TIME - hours(2 * DAY),
    )


def test_as_of_alone_is_compared_with_a_week_before() -> None:
    params = DiffParams.parse(DiffQuery(as_of="now-1d"), max_levels=10, now=BASE_TIME)
    assert params.after.as_of == BASE_TIME - hours(DAY)
    assert params.before.as_of == BASE_TIME - hours(8 * DAY)
    # Each side's window is the week before its own time.
    assert params.before.end == params.before.as_of
    assert params.before.start == BASE_TIME - hours(15 * DAY)
    against = DiffParams.parse(DiffQuery(against="now-3d"), max_levels=10, now=BASE_TIME)
    assert (against.after.as_of, against.before.as_of) == (BASE_TIME, BASE_TIME - hours(3 * DAY))


def test_windows_parse_relative_times_on_each_side() -> None:
    now = BASE_TIME
    asked = DiffQuery(from_window="now-14d..now-7d", to_window="now-7d..now")
    params = DiffParams.parse(asked, max_levels=10, now=now)
    assert (params.before.start, params.before.end) == (now - hours(14 * DAY), now - hours(7 * DAY))
    assert (params.after.start, params.after.end) == (now - hours(7 * DAY), now)
    assert "run" not in params.after.collapse  # the diff collapses runs itself
