"""`POST /api/v1/lineage?atomic=false` (design §3.1): the good events of a batch are stored and
the answer is 207 with one outcome per event; the default stays all-or-nothing."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.readback import dataset_flows
from upstream.store.engine import Store

NS = "outcomes"
RUN = "6f1c0a5e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"


def good(name: str, run_id: str | None = None) -> dict[str, object]:
    return run_event(
        (NS, name),
        run_id=run_id,
        inputs=[ds(NS, f"{name}_in")],
        outputs=[ds(NS, f"{name}_out")],
    )


def bad_run_id() -> dict[str, object]:
    event = good("bad")
    event["run"] = {"runId": "not-a-uuid"}
    return event


def post(client: TestClient, body: object, query: str = "?atomic=false") -> tuple[int, object]:
    response = client.post(
        f"/api/v1/lineage{query}",
        content=json.dumps(body),
        headers={"content-type": "application/json"},
    )
    return response.status_code, response.json() if response.content else None


def test_the_good_events_of_a_batch_are_stored_and_each_has_its_outcome(
    client: TestClient, store: Store
) -> None:
    status, answer = post(client, [good("a"), bad_run_id(), good("b")])
    assert status == 207
    assert isinstance(answer, dict)
    assert (answer["stored"], answer["duplicates"], answer["refused"]) == (2, 0, 1)
    first, second, third = answer["outcomes"]
    assert first == {"index": 0, "status": 201, "duplicate": False}
    assert third == {"index": 2, "status": 201, "duplicate": False}
    assert (second["index"], second["status"]) == (1, 422)
    assert [e["path"] for e in second["errors"]] == ["[1].run.runId"]
    assert dataset_flows(store) == {
        (f"{NS}/a_in", f"{NS}/a_out"),
        (f"{NS}/b_in", f"{NS}/b_out"),
    }


def test_the_default_batch_stays_all_or_nothing(client: TestClient, store: Store) -> None:
    status, answer = post(client, [good("a"), bad_run_id(), good("b")], query="")
    assert status == 422
    assert isinstance(answer, dict)
    assert [e["path"] for e in answer["errors"]] == ["[1].run.runId"]
    assert dataset_flows(store) == set()


def test_an_event_the_store_refuses_fails_only_itself(client: TestClient, store: Store) -> None:
    assert post(client, good("a", RUN), query="")[0] == 201
    # The same run id reported for another job is a conflict only the store can see.
    status, answer = post(client, [good("other", RUN), good("b"), good("a", RUN)])
    assert status == 207
    assert isinstance(answer, dict)
    conflict, stored, again = answer["outcomes"]
    assert conflict["status"] == 422
    assert conflict["errors"] == [
        {"path": "[0].run.runId", "message": f"run {RUN} was already reported for a different job"}
    ]
    assert stored == {"index": 1, "status": 201, "duplicate": False}
    assert again == {"index": 2, "status": 201, "duplicate": True}
    assert (answer["stored"], answer["duplicates"], answer["refused"]) == (1, 1, 1)
    assert dataset_flows(store) == {
        (f"{NS}/a_in", f"{NS}/a_out"),
        (f"{NS}/b_in", f"{NS}/b_out"),
    }


def test_a_single_event_gets_one_unlocated_outcome(client: TestClient) -> None:
    status, answer = post(client, bad_run_id())
    assert status == 207
    assert isinstance(answer, dict)
    [outcome] = answer["outcomes"]
    assert (outcome["index"], outcome["status"]) == (0, 422)
    assert [e["path"] for e in outcome["errors"]] == ["run.runId"]


def test_atomic_must_be_a_boolean(client: TestClient, store: Store) -> None:
    status, answer = post(client, [good("a")], query="?atomic=perhaps")
    assert status == 400
    assert isinstance(answer, dict)
    assert answer["errors"][0]["path"] == "atomic"
    assert dataset_flows(store) == set()


def test_a_malformed_body_is_still_refused_whole(client: TestClient) -> None:
    response = client.post(
        "/api/v1/lineage?atomic=false",
        content=b"[{",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
