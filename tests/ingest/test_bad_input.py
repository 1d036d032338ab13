"""Every kind of bad input gets a clear 4xx naming the problem, and changes nothing stored
(design §3.1, §5). Each case posts to a database that already holds an event, and compares
the row count of every table before and after."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import column_lineage, dataset_entry, ds, lineage_facet, run_event
from tests.readback import counts
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.engine import Store

GOOD = run_event(
    ("bad-input", "job"), inputs=[ds("bad-input", "in")], outputs=[ds("bad-input", "out")]
)
JSON = {"content-type": "application/json"}
GZIP = {"content-type": "application/json", "content-encoding": "gzip"}


def mutated(change: Callable[[dict[str, Any]], object]) -> bytes:
    """GOOD with one change made, as a JSON body."""
    event = copy.deepcopy(GOOD)
    change(event)
    return json.dumps(event).encode()


def nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


CORPUS: dict[str, tuple[bytes, dict[str, str], int, str]] = {
    # id: (body, headers, status, the message, or the start of it)
    "malformed JSON": (
        b'{"eventType": "START",',
        JSON,
        400,
        "body: malformed JSON at line 1 column 23: Expecting property name enclosed in double "
        "quotes",
    ),
    "trailing garbage": (
        json.dumps(GOOD).encode() + b" }",
        JSON,
        400,
        "body: malformed JSON at line 1 column",
    ),
    "empty body": (b"", JSON, 400, "body: empty; expected a JSON event or array of events"),
    "empty array": (b"[]", JSON, 400, "body: an empty array holds no events"),
    "null": (b"null", JSON, 422, "an event must be a JSON object, not null"),
    "array of numbers": (
        b"[1]",
        JSON,
        422,
        "[0]: an event must be a JSON object, not number",
    ),
    "eventTime of the wrong type": (
        mutated(lambda e: e.update(eventTime=12345)),
        JSON,
        422,
        "eventTime: must be an ISO-8601 string, not int",
    ),
    "job name of the wrong type": (
        mutated(lambda e: e["job"].update(name=5)),
        JSON,
        422,
        "job.name: must be a string, not int",
    ),
    "inputs of the wrong type": (
        mutated(lambda e: e.update(inputs="in")),
        JSON,
        422,
        "inputs: Input should be a valid list",
    ),
    "facets of the wrong type": (
        mutated(lambda e: e["job"].update(facets="none")),
        JSON,
        422,
        "job.facets: Input should be a valid dictionary",
    ),
    "missing job": (mutated(lambda e: e.pop("job")), JSON, 422, "job: Field required"),
    "missing run": (mutated(lambda e: e.pop("run")), JSON, 422, "run: Field required"),
    "missing eventTime": (
        mutated(lambda e: e.pop("eventTime")),
        JSON,
        422,
        "eventTime: Field required",
    ),
    "blank dataset name": (
        mutated(lambda e: e["outputs"][0].update(name="  ")),
        JSON,
        422,
        "outputs[0].name: must not be blank",
    ),
    "non-UUID runId": (
        mutated(lambda e: e["run"].update(runId="run-42")),
        JSON,
        422,
        "run.runId: 'run-42' is not a UUID",
    ),
    "1 MB non-UUID runId": (
        mutated(lambda e: e["run"].update(runId="x" * 1_000_000)),
        JSON,
        422,
        "run.runId: '" + "x" * 80 + "' is not a UUID",
    ),
    "lineage entry with namespace but no name": (
        mutated(
            lambda e: e["job"].update(
                facets=lineage_facet(
                    {"type": "DATASET", "namespace": "bad-input", "inputs": []},
                )
            )
        ),
        JSON,
        422,
        "job.facets.lineage.entries[0].name: Field required",
    ),
    "lineage input with namespace but no name": (
        mutated(
            lambda e: e["job"].update(
                facets=lineage_facet(
                    dataset_entry(
                        "bad-input", "out", inputs=[{"type": "DATASET", "namespace": "bad-input"}]
                    )
                )
            )
        ),
        JSON,
        422,
        "job.facets.lineage.entries[0].inputs[0].name: Field required",
    ),
    "unknown eventType": (
        mutated(lambda e: e.update(eventType="FINISHED")),
        JSON,
        422,
        "eventType: Input should be 'START', 'RUNNING', 'COMPLETE', 'ABORT', 'FAIL' or 'OTHER'",
    ),
    "eventTime past the last instant": (
        mutated(lambda e: e.update(eventTime="9999-12-31T23:59:59-05:00")),
        JSON,
        422,
        "eventTime: 9999-12-31T23:59:59-05:00 is out of the supported range of years",
    ),
    "JSON nested 10,000 deep": (
        b'{"run": ' + nest(10_000) + b"}",
        JSON,
        400,
        "body: JSON is nested deeper than 100 levels",
    ),
    "a facet nested 150 deep": (
        mutated(lambda e: e["run"]["facets"].update(deep=json.loads(nest(150)))),
        JSON,
        400,
        "run.facets.deep[0][0][0]",
    ),
    "invalid UTF-8": (
        json.dumps(GOOD).encode().replace(b'"job"', b'"j\xffob"'),
        JSON,
        400,
        "body: not valid UTF-8 at byte",
    ),
    "NUL in a name": (
        mutated(lambda e: e["job"].update(name="a\0b")),
        JSON,
        400,
        "job.name: contains the NUL character (\\u0000)",
    ),
    "lone surrogate in a facet key": (
        json.dumps(GOOD).replace('"facets": {}', '"facets": {"x\\udc00": 1}', 1).encode(),
        JSON,
        400,
        "run.facets.x?: contains a lone UTF-16 surrogate escape",
    ),
    "NaN": (b'{"eventTime": NaN}', JSON, 400, "body: NaN is not a JSON number"),
    "a number too large": (b'{"x": 1e999}', JSON, 400, "body: the number 1e999 is too large"),
    "an integer of 5000 digits": (
        b'{"x": ' + b"7" * 5000 + b"}",
        JSON,
        400,
        "body: Exceeds the limit (4300 digits) for integer string conversion",
    ),
    "wrong content type": (
        json.dumps(GOOD).encode(),
        {"content-type": "text/plain"},
        415,
        "content-type must be application/json, not text/plain",
    ),
    "form content type": (
        b"a=b",
        {"content-type": "application/x-www-form-urlencoded"},
        415,
        "content-type must be application/json, not application/x-www-form-urlencoded",
    ),
    "unsupported content encoding": (
        json.dumps(GOOD).encode(),
        {"content-type": "application/json", "content-encoding": "br"},
        415,
        "content-encoding br is not supported (use gzip)",
    ),
    "broken gzip": (b"this is not gzip", GZIP, 400, "body: not valid gzip"),
    "truncated gzip": (
        gzip.compress(json.dumps(GOOD).encode())[:40],
        GZIP,
        400,
        "body: gzip stream is truncated",
    ),
    "gzip of malformed JSON": (gzip.compress(b"{]"), GZIP, 400, "body: malformed JSON"),
    "a batch with one bad event": (
        json.dumps(
            [
                run_event(("bad-input", "batch"), outputs=[ds("bad-input", "b1")]),
                {
                    **run_event(("bad-input", "batch"), outputs=[ds("bad-input", "b2")]),
                    "run": {"runId": "nope"},
                },
                run_event(("bad-input", "batch"), outputs=[ds("bad-input", "b3")]),
            ]
        ).encode(),
        JSON,
        422,
        "[1].run.runId: 'nope' is not a UUID",
    ),
}


@pytest.fixture
def seeded(client: TestClient, store: Store) -> TestClient:
    """A database holding one event, so "unchanged" is not just "still empty"."""
    assert client.post("/api/v1/lineage", json=GOOD).status_code == 201
    return client


def test_bad_input_is_refused_and_changes_nothing(seeded: TestClient, store: Store) -> None:
    """One database for the whole corpus (one fresh database per case costs more than the
    cases); every case is tried, and every failure is reported by name."""
    before = counts(store)
    failures = []
    for case, (body, headers, status, message) in sorted(CORPUS.items()):
        response = seeded.post("/api/v1/lineage", content=body, headers=headers)
        error = response.json()
        if (
            response.status_code != status
            or error.get("code") != status
            or not error.get("message", "").startswith(message)
            or len(error["message"]) > 2000
        ):
            failures.append(f"{case}: {response.status_code} {response.text[:300]}")
        elif counts(store) != before:
            failures.append(f"{case}: changed the database: {before} -> {counts(store)}")
    assert failures == []


def test_the_corpus_events_are_good_apart_from_their_fault(seeded: TestClient) -> None:
    """Guard for the corpus: the event it mutates is accepted (and a repeat is a no-op)."""
    assert seeded.post("/api/v1/lineage", json=GOOD).status_code == 201


def test_a_one_megabyte_name_is_stored_verbatim(client: TestClient, store: Store) -> None:
    name = "n" * 999_999 + "Ω"
    event = run_event(("bad-input", name), inputs=[ds("bad-input", name)], outputs=[ds(name, "o")])
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    with store.read() as conn:
        job_names = conn.execute(t.jobs.select().with_only_columns(t.jobs.c.name)).scalars()
        assert list(job_names) == [name]
        namespaces = conn.execute(t.namespaces.select().with_only_columns(t.namespaces.c.name))
        assert sorted(namespaces.scalars()) == sorted(["bad-input", name])
    assert counts(store)["events"] == 1


# -- limits ---------------------------------------------------------------------------------


@pytest.fixture
def limited(db_url: str) -> Iterator[TestClient]:
    """The API with small limits: 4 kB bodies, 3 events a batch."""
    settings = Settings(db_url=db_url, max_body_bytes=4096, max_batch_events=3)
    with TestClient(create_app(settings, migrate=False)) as test_client:
        yield test_client


def padded(size: int) -> dict[str, Any]:
    """A valid event whose JSON is about `size` bytes, thanks to a facet nobody reads."""
    event = run_event(("limits", "job"), outputs=[ds("limits", "out")])
    event["run"]["facets"]["padding"] = {"text": ""}
    base = len(json.dumps(event))
    event["run"]["facets"]["padding"]["text"] = "p" * max(0, size - base)
    return event


def test_a_body_within_the_limit_is_accepted(limited: TestClient, store: Store) -> None:
    body = json.dumps(padded(4000)).encode()
    assert len(body) <= 4096
    assert limited.post("/api/v1/lineage", content=body, headers=JSON).status_code == 201
    assert counts(store)["events"] == 1


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_413(limited: TestClient, store: Store, chunked: bool) -> None:
    body = json.dumps(padded(5000)).encode()
    content: bytes | Iterator[bytes] = iter([body[:3000], body[3000:]]) if chunked else body
    response = limited.post("/api/v1/lineage", content=content, headers=JSON)
    assert response.status_code == 413
    assert response.json() == {"code": 413, "message": "request body is larger than 4096 bytes"}
    assert counts(store)["events"] == 0


def test_a_gzip_bomb_is_413(limited: TestClient, store: Store) -> None:
    event = padded(5000)
    bomb = gzip.compress(json.dumps(event).encode())
    assert len(bomb) < 4096
    response = limited.post("/api/v1/lineage", content=bomb, headers=GZIP)
    assert response.status_code == 413
    assert response.json()["message"] == "request body inflates to more than 4096 bytes"
    huge = gzip.compress(b"[" + b" " * 50_000_000 + b"]")
    assert limited.post("/api/v1/lineage", content=huge, headers=GZIP).status_code == 413
    assert counts(store)["events"] == 0


def test_gzip_members_are_concatenated(limited: TestClient, store: Store) -> None:
    events = [run_event(("limits", "gz"), outputs=[ds("limits", f"o{i}")]) for i in range(2)]
    text = json.dumps(events)
    half = len(text) // 2
    body = gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode())
    assert limited.post("/api/v1/lineage", content=body, headers=GZIP).status_code == 201
    assert counts(store)["events"] == 2


def test_a_batch_over_the_limit_is_413(limited: TestClient, store: Store) -> None:
    events = [run_event(("limits", "batch"), outputs=[ds("limits", f"o{i}")]) for i in range(4)]
    response = limited.post("/api/v1/lineage", json=events)
    assert response.status_code == 413
    assert response.json()["message"] == "a batch may hold at most 3 events; this one holds more"
    assert counts(store)["events"] == 0
    assert limited.post("/api/v1/lineage", json=events[:3]).status_code == 201
    assert counts(store)["events"] == 3


def test_a_batch_event_over_the_value_limit_is_413_after_parsing(db_url: str, store: Store) -> None:
    """A batch too large to count on its bytes alone but small enough to parse is measured
    event by event once parsed; the refusal names the event, and nothing is stored."""
    small = run_event(("limits", "values"), outputs=[ds("limits", "small")])
    big = run_event(("limits", "values"), outputs=[ds("limits", "big")])
    # 97 more values: 96 items of the list and the list itself.
    big["run"]["facets"]["many"] = {"items": list(range(96))}
    events = [small, big, small]
    settings = Settings(db_url=db_url, max_event_values=100)
    with TestClient(create_app(settings, migrate=False)) as limited:
        response = limited.post("/api/v1/lineage", json=events)
        assert response.status_code == 413
        assert response.json()["message"] == (
            "[1]: holds more than 100 JSON values (the server's max_event_values); "
            "split it into smaller events"
        )
        assert counts(store)["events"] == 0
        big["run"]["facets"]["many"]["items"] = ["a,[{", "b"]  # text in strings is no value
        assert limited.post("/api/v1/lineage", json=events).status_code == 201
    assert counts(store)["events"] == 2  # the third event is the first again


@pytest.fixture
def capped(db_url: str) -> Iterator[TestClient]:
    """The API with max_levels 3 and max_lineage_nodes 5, holding the chain
    d0 -> j1 -> d1 -> j2 -> ... -> j8 -> d8 (field f flows along it)."""
    settings = Settings(db_url=db_url, max_levels=3, max_lineage_nodes=5)
    with TestClient(create_app(settings, migrate=False)) as test_client:
        chain = [
            run_event(
                ("caps", f"j{i}"),
                inputs=[ds("caps", f"d{i - 1}")],
                outputs=[
                    ds(
                        "caps",
                        f"d{i}",
                        columnLineage=column_lineage({"f": [("caps", f"d{i - 1}", "f")]}),
                    )
                ],
            )
            for i in range(1, 9)
        ]
        assert test_client.post("/api/v1/lineage", json=chain).status_code == 201
        yield test_client


WINDOW = "start=0&end=now%2B1d"


def test_levels_and_depth_above_the_cap_are_400(capped: TestClient) -> None:
    refusals = {
        f"/v3/namespaces/caps/datasets/d0/lineage?{WINDOW}&levels=4": (
            "levels: must be at most 3 (the server's max_levels), not 4"
        ),
        "/v3/namespaces/caps/datasets/d8/lineage/fields/f?direction=incoming&levels=4": (
            "levels: must be at most 3 (the server's max_levels), not 4"
        ),
        "/api/v1/lineage?nodeId=dataset:caps:d0&depth=4": "depth: must be at most 3, not 4",
        "/api/v1/column-lineage?nodeId=dataset:caps:d0&depth=4": "depth: must be at most 3, not 4",
    }
    for url, message in refusals.items():
        response = capped.get(url)
        assert (response.status_code, response.json()["message"]) == (400, message), url
    allowed = capped.get(
        "/v3/namespaces/caps/datasets/d8/lineage/fields/f?direction=incoming&levels=3"
    )
    assert allowed.status_code == 200


def test_lineage_responses_are_cut_at_the_node_cap(capped: TestClient) -> None:
    small = capped.get(f"/v3/namespaces/caps/datasets/d0/lineage?{WINDOW}&levels=1").json()
    assert (sorted(small["data"]), sorted(small["programs"])) == (
        ["dataset.caps.d0", "dataset.caps.d1"],
        ["job.caps.j1"],
    )
    assert "truncated" not in small
    cut = capped.get(f"/v3/namespaces/caps/datasets/d0/lineage?{WINDOW}&levels=3").json()
    assert cut["truncated"] is True
    assert len(cut["data"]) + len(cut["programs"]) <= 5
    assert "dataset.caps.d0" in cut["data"]

    whole = capped.get("/api/v1/lineage?nodeId=dataset:caps:d0&depth=1").json()
    assert (len(whole["graph"]), whole["truncated"]) == (3, False)
    marquez = capped.get("/api/v1/lineage?nodeId=dataset:caps:d0&depth=3").json()
    assert (len(marquez["graph"]), marquez["truncated"]) == (5, True)

    # The whole graph counts programs too: d0, d1 and d2 with j1 and j2 are the 5 nodes; d3
    # would bring j3 as well.
    graph = capped.get("/v3/lineage/graph").json()
    assert graph["truncated"] is True
    assert (sorted(graph["data"]), sorted(graph["programs"])) == (
        ["dataset.caps.d0", "dataset.caps.d1", "dataset.caps.d2"],
        ["job.caps.j1", "job.caps.j2"],
    )
    assert [(f["source"], f["target"], f["program"]) for f in graph["flows"]] == [
        ("dataset.caps.d0", "dataset.caps.d1", "job.caps.j1"),
        ("dataset.caps.d1", "dataset.caps.d2", "job.caps.j2"),
    ]
    # Every node each endpoint returns counts: the Marquez graph's jobs and datasets (above),
    # the column graph's fields.
    columns = capped.get("/api/v1/column-lineage?nodeId=dataset:caps:d8&depth=3").json()
    assert (len(columns["graph"]), columns["truncated"]) == (4, False)
    assert (
        "truncated"
        not in capped.get(f"/v3/namespaces/caps/datasets/d0/lineage?{WINDOW}&levels=1").json()
    )
