"""Run lineage (design §4.5): which run of which job made the data a run read.

Expected answers are worked out by hand from the events each test posts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, iso, run_event
from tests.conftest import new_run_id, post
from upstream.query.run_lineage import state_as_of

K = "grandmas.kitchen"
PICK_1 = "fc57cd10-90ce-49aa-ac91-29d222d66fdf"
FILLING_1 = "ab468fb4-4654-4286-9679-59d13d185b19"
PIE_1 = "66ad484e-9bba-4eed-a5f5-3a17558e7f6b"
PICK_2 = "155dbf08-c4c5-43e6-bb3a-8095c4ba59b8"
FILLING_2 = "e7d71919-25b3-49cc-a0f5-63ecbee72b0f"
PIE_2 = "bcef9942-cb5c-476a-995b-3e5ca14aff27"
CIDER = "5f974ced-9cb5-49cc-b15d-230d41d31005"
VINEGAR = "a1060004-2a7b-4c3f-a8f9-696362c134df"


def lineage(client: TestClient, run_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v3/runs/{run_id}/lineage", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def read_from(body: dict[str, Any]) -> set[tuple[str, str, str | None]]:
    """(reader run, dataset name, writing run) for each read in the answer."""
    versions = {v["id"]: v for v in body["datasetVersions"]}
    return {
        (
            e["run"],
            versions[e["datasetVersion"]]["dataset"]["name"],
            versions[e["datasetVersion"]]["writtenBy"],
        )
        for e in body["edges"]
        if e["type"] == "read"
    }


@pytest.fixture
def apples(client: TestClient, fixtures_dir: Path) -> TestClient:
    for path in sorted((fixtures_dir / "marquez" / "apples").glob("*.json")):
        post(client, json.loads(path.read_text()))
    return client


def test_the_second_pie_traces_to_the_second_pick_of_apples(apples: TestClient) -> None:
    body = lineage(apples, PIE_2, direction="upstream", levels=5)
    # The second pie (Oct 16) read the filling made on Oct 15, which read the apples picked
    # that morning (crab apples from the backyard), not the August pick from the orchard.
    assert read_from(body) == {
        (PIE_2, "apple.filling", FILLING_2),
        (FILLING_2, "apples", PICK_2),
        (FILLING_2, "cinnamon", None),
        (FILLING_2, "sugar", None),
        (PICK_2, "crab.apples", None),
    }
    runs = {r["runId"]: r for r in body["runs"]}
    assert set(runs) == {PIE_2, FILLING_2, PICK_2}
    assert runs[PICK_2]["job"] == {"namespace": K, "name": "gather_apples"}
    assert runs[PICK_2]["state"] == "COMPLETE"
    assert runs[PICK_2]["startedAt"] == "2020-10-15T03:00:00+00:00"
    assert [r["level"] for r in body["runs"]] == [0, 1, 2]
    writes = {(e["run"], e["datasetVersion"]) for e in body["edges"] if e["type"] == "write"}
    versions = {v["id"]: v for v in body["datasetVersions"]}
    assert {(run, versions[key]["dataset"]["name"]) for run, key in writes} == {
        (FILLING_2, "apple.filling"),
        (PICK_2, "apples"),
    }
    unknown = versions["dataset:backyard:crab.apples"]
    assert unknown == {
        "id": "dataset:backyard:crab.apples",
        "dataset": {"namespace": "backyard", "name": "crab.apples"},
        "version": None,
        "producerVersion": None,
        "writtenBy": None,
    }


def test_the_first_pie_traces_to_the_first_pick(apples: TestClient) -> None:
    body = lineage(apples, PIE_1, direction="upstream")
    assert read_from(body) == {
        (PIE_1, "apple.filling", FILLING_1),
        (FILLING_1, "apples", PICK_1),
        (FILLING_1, "cinnamon", None),
        (PICK_1, "red.delicious", None),
    }


def test_levels_bound_the_walk(apples: TestClient) -> None:
    body = lineage(apples, PIE_2, direction="upstream", levels=1)
    assert read_from(body) == {(PIE_2, "apple.filling", FILLING_2)}
    assert {r["runId"] for r in body["runs"]} == {PIE_2, FILLING_2}


def test_downstream_of_a_pick_are_the_runs_that_read_its_apples(apples: TestClient) -> None:
    # The first pick's apples were read by the September filling and the cider; the
    # vinegar read the cider; the first pie read the September filling. The second
    # filling (Oct 15) read the second pick's apples, so it is not downstream of the first.
    body = lineage(apples, PICK_1, direction="downstream", levels=5)
    assert read_from(body) == {
        (FILLING_1, "apples", PICK_1),
        (CIDER, "apples", PICK_1),
        (PIE_1, "apple.filling", FILLING_1),
        (VINEGAR, "apple.cider", CIDER),
    }
    second = lineage(apples, PICK_2, direction="downstream", levels=5)
    assert read_from(second) == {
        (FILLING_2, "apples", PICK_2),
        (PIE_2, "apple.filling", FILLING_2),
    }


def test_both_directions_are_the_union(apples: TestClient) -> None:
    both = lineage(apples, FILLING_2)
    up = lineage(apples, FILLING_2, direction="upstream")
    down = lineage(apples, FILLING_2, direction="downstream")
    assert read_from(both) == read_from(up) | read_from(down)
    assert (PIE_2, "apple.filling", FILLING_2) in read_from(both)
    assert (FILLING_2, "apples", PICK_2) in read_from(both)


def test_a_read_during_a_rewrite_gets_the_earlier_complete_version(client: TestClient) -> None:
    ns = "warehouse"
    first, rewrite, reader, failed = (new_run_id() for _ in range(4))
    post(
        client,
        run_event((ns, "load"), run_id=first, event_type="START", time=BASE_TIME),
        run_event(
            (ns, "load"), run_id=first, time=BASE_TIME + hours(1), outputs=[ds(ns, "orders")]
        ),
        # The rewrite runs from 3h to 5h; the reader starts at 4h, while it is writing.
        run_event((ns, "load"), run_id=rewrite, event_type="START", time=BASE_TIME + hours(3)),
        run_event(
            (ns, "load"), run_id=rewrite, time=BASE_TIME + hours(5), outputs=[ds(ns, "orders")]
        ),
        # A run that failed while writing made no version anyone read.
        run_event((ns, "load"), run_id=failed, event_type="START", time=BASE_TIME + hours(2)),
        run_event(
            (ns, "load"),
            run_id=failed,
            event_type="FAIL",
            time=BASE_TIME + hours(2.5),
            outputs=[ds(ns, "orders")],
        ),
        run_event((ns, "report"), run_id=reader, event_type="START", time=BASE_TIME + hours(4)),
        run_event(
            (ns, "report"),
            run_id=reader,
            time=BASE_TIME + hours(6),
            inputs=[ds(ns, "orders")],
            outputs=[ds(ns, "summary")],
        ),
    )
    assert read_from(lineage(client, reader, direction="upstream")) == {(reader, "orders", first)}
    # Read the other way: the first load's version fed the report; the rewrite's none yet.
    assert read_from(lineage(client, first, direction="downstream")) == {(reader, "orders", first)}
    assert read_from(lineage(client, rewrite, direction="downstream")) == set()
    assert read_from(lineage(client, failed, direction="downstream")) == set()


def test_the_version_the_producer_named_wins_over_time(client: TestClient) -> None:
    ns = "lake"
    old, new, reader = new_run_id(), new_run_id(), new_run_id()

    def version(name: str) -> dict[str, Any]:
        return {"version": {"datasetVersion": name}}

    post(
        client,
        run_event((ns, "snap"), run_id=old, time=BASE_TIME, outputs=[ds(ns, "t", **version("v1"))]),
        run_event(
            (ns, "snap"),
            run_id=new,
            time=BASE_TIME + hours(1),
            outputs=[ds(ns, "t", **version("v2"))],
        ),
        # Read after both, but of snapshot v1 (time travel): the version named wins.
        run_event(
            (ns, "audit"),
            run_id=reader,
            time=BASE_TIME + hours(2),
            inputs=[ds(ns, "t", **version("v1"))],
        ),
    )
    body = lineage(client, reader, direction="upstream")
    assert read_from(body) == {(reader, "t", old)}
    assert [v["producerVersion"] for v in body["datasetVersions"]] == ["v1"]
    assert read_from(lineage(client, old, direction="downstream")) == {(reader, "t", old)}
    assert read_from(lineage(client, new, direction="downstream")) == set()


def test_a_cycle_of_runs_ends_at_the_levels(client: TestClient) -> None:
    """A job that reads and rewrites its own table: each run read the previous run's version."""
    ns = "loop"
    runs = [new_run_id() for _ in range(4)]
    post(
        client,
        *(
            run_event(
                (ns, "increment"),
                run_id=run,
                time=BASE_TIME + hours(i),
                inputs=[ds(ns, "counter")],
                outputs=[ds(ns, "counter")],
            )
            for i, run in enumerate(runs)
        ),
    )
    body = lineage(client, runs[3], direction="upstream", levels=2)
    assert read_from(body) == {
        (runs[3], "counter", runs[2]),
        (runs[2], "counter", runs[1]),
    }


def test_as_of_answers_as_the_runs_stood(apples: TestClient) -> None:
    # On Oct 15 at 14:00 (+10:00) the second pick had completed and the second filling had
    # not started: the pick's apples had no reader yet.
    before = lineage(apples, PICK_2, direction="downstream", asOf="2020-10-15T04:00:00Z")
    assert read_from(before) == set()
    assert before["asOf"] == "2020-10-15T04:00:00+00:00"
    after = lineage(apples, PICK_2, direction="downstream", asOf="2020-10-15T05:00:00Z")
    assert read_from(after) == {(FILLING_2, "apples", PICK_2)}
    # The second pie had not started by then.
    response = apples.get(f"/v3/runs/{PIE_2}/lineage", params={"asOf": "2020-10-15T05:00:00Z"})
    assert response.status_code == 404
    assert "had not started" in response.json()["message"]


def test_state_as_of_shows_a_run_that_ended_later_as_running() -> None:
    end = BASE_TIME + hours(2)
    assert state_as_of("COMPLETE", end, None) == ("COMPLETE", end)
    assert state_as_of("COMPLETE", end, end) == ("COMPLETE", end)
    assert state_as_of("FAIL", end, BASE_TIME) == ("RUNNING", None)
    assert state_as_of("RUNNING", None, BASE_TIME) == ("RUNNING", None)


def test_the_answer_is_cut_at_the_node_cap(db_url: str, fixtures_dir: Path) -> None:
    from upstream.api.app import create_app
    from upstream.settings import Settings

    with TestClient(create_app(Settings(db_url=db_url, max_lineage_nodes=3))) as client:
        for path in sorted((fixtures_dir / "marquez" / "apples").glob("*.json")):
            post(client, json.loads(path.read_text()))
        body = lineage(client, PIE_2, direction="upstream")
    # Nearest first: the pie, the filling version and its writer fill the three places.
    assert body["truncated"] is True
    assert read_from(body) == {(PIE_2, "apple.filling", FILLING_2)}


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("not-a-uuid", {}, "runId"),
        (PIE_2, {"direction": "sideways"}, "direction"),
        (PIE_2, {"levels": "0"}, "levels"),
        (PIE_2, {"levels": "ten"}, "levels"),
        (PIE_2, {"asOf": "yesterday"}, "asOf"),
    ],
)
def test_bad_parameters_are_refused_by_name(
    client: TestClient, path: str, params: dict[str, str], field: str
) -> None:
    response = client.get(f"/v3/runs/{path}/lineage", params=params)
    assert response.status_code == 400
    assert field in response.text


def test_an_unknown_run_is_404(client: TestClient) -> None:
    response = client.get(f"/v3/runs/{new_run_id()}/lineage")
    assert response.status_code == 404
    assert "not found" in response.json()["message"]


def test_times_are_utc_iso(apples: TestClient) -> None:
    body = lineage(apples, PIE_2, direction="upstream", levels=1)
    pie = next(r for r in body["runs"] if r["runId"] == PIE_2)
    assert pie["startedAt"] == iso(BASE_TIME.replace(2020, 10, 16, 5)).replace("Z", "+00:00")
