"""Streaming runs (design §3.3): `jobType.emissionPattern` says what a job's events hold. A
COMPLETE_SNAPSHOT event states the run's whole lineage as of its time, so the newest snapshot
(by event time) replaces what earlier events said; ACCUMULATIVE events add, as always. Every
order of a run's events, and a rebuild, give the same lineage. The facet is shaped as the
spec's JobTypeJobFacet.json (2-0-4)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, PRODUCER, ds, hours, run_event
from tests.readback import dataset_flows
from upstream.ingest import rebuild as rebuild_module
from upstream.ingest.rebuild import rebuild
from upstream.store.engine import Store

NS = "kafka://broker:9092"
RUN = "55555555-eeee-4eee-8eee-555555555555"


def job_type(completeness: str | None, **extra: Any) -> dict[str, Any]:
    facet: dict[str, Any] = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json"
        "#/$defs/JobTypeJobFacet",
        "processingType": "STREAMING",
        "integration": "FLINK",
        "jobType": "JOB",
    }
    if completeness is not None:
        facet["emissionPattern"] = {
            "eventTrigger": "PERIODIC",
            "eventCompleteness": completeness,
            "windowDuration": 300,
            **extra,
        }
    return facet


def streaming_run(completeness: str | None) -> list[dict[str, Any]]:
    """START reads a, writes x; an hour later it reads a and b, writes x; two hours later
    it reads only b and writes only y."""
    facets = {"jobType": job_type(completeness)}

    def event(kind: str, at: int, reads: list[str], writes: list[str]) -> dict[str, Any]:
        return run_event(
            (NS, "enrich"),
            run_id=RUN,
            event_type=kind,
            time=BASE_TIME + hours(at),
            inputs=[ds(NS, name) for name in reads],
            outputs=[ds(NS, name) for name in writes],
            job_facets=facets,
        )

    return [
        event("START", 0, ["a"], ["x"]),
        event("RUNNING", 1, ["a", "b"], ["x"]),
        event("RUNNING", 2, ["b"], ["y"]),
    ]


def flows(store: Store) -> set[tuple[str, str]]:
    return {(s.removeprefix(f"{NS}/"), t.removeprefix(f"{NS}/")) for s, t in dataset_flows(store)}


def post(client: TestClient, *events: dict[str, Any]) -> None:
    response = client.post("/api/v1/lineage", json=list(events))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_newest_snapshot_is_the_runs_lineage_whatever_the_order(
    client: TestClient, store: Store, order: tuple[int, ...]
) -> None:
    events = streaming_run("COMPLETE_SNAPSHOT")
    for index in order:
        post(client, events[index])
    assert flows(store) == {("b", "y")}
    run = client.get(f"/api/v1/jobs/runs/{RUN}").json()
    # The run itself still comes from all its events.
    assert run["state"] == "RUNNING"
    assert run["startedAt"] == "2026-11-01T12:00:00Z"


def test_accumulative_events_add_up(client: TestClient, store: Store) -> None:
    post(client, *streaming_run("ACCUMULATIVE"))
    assert flows(store) == {("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")}


def test_without_an_emission_pattern_events_add_up(client: TestClient, store: Store) -> None:
    post(client, *streaming_run(None))
    assert flows(store) == {("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")}


def test_the_lineage_answer_shows_only_the_current_snapshot(client: TestClient) -> None:
    post(client, *streaming_run("COMPLETE_SNAPSHOT"))
    answer = client.get(
        f"/v3/namespaces/{NS.replace('/', '%2F')}/datasets/b/lineage",
        params={"start": "2026-10-31T00:00:00Z", "end": "2026-11-02T00:00:00Z"},
    ).json()
    assert {(r["data"].rsplit(".", 1)[-1], r["accesses"][0]) for r in answer["relations"]} == {
        ("b", "read"),
        ("y", "write"),
    }
    for name in ("a", "x"):
        old = client.get(
            f"/v3/namespaces/{NS.replace('/', '%2F')}/datasets/{name}/lineage",
            params={"start": "2026-10-31T00:00:00Z", "end": "2026-11-02T00:00:00Z"},
        ).json()
        assert old["relations"] == []


def test_a_rebuild_in_small_batches_gives_the_same(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = streaming_run("COMPLETE_SNAPSHOT")
    for event in events:
        post(client, event)
    monkeypatch.setattr(rebuild_module, "BATCH_EVENTS", 1)
    report = rebuild(store)
    assert report.refused == ()
    assert flows(store) == {("b", "y")}


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (
            {"eventCompleteness": "SOMETIMES"},
            "job.facets.jobType.emissionPattern.eventCompleteness",
        ),
        ({"windowDuration": 0}, "job.facets.jobType.emissionPattern.windowDuration"),
        ("PERIODIC", "job.facets.jobType.emissionPattern"),
    ],
)
def test_a_malformed_emission_pattern_is_refused_naming_its_path(
    client: TestClient, store: Store, pattern: Any, path: str
) -> None:
    event = streaming_run("COMPLETE_SNAPSHOT")[0]
    facet = event["job"]["facets"]["jobType"]
    facet["emissionPattern"] = (
        {**facet["emissionPattern"], **pattern} if isinstance(pattern, dict) else pattern
    )
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422, response.text
    assert [e["path"] for e in response.json()["errors"]] == [path]
    assert flows(store) == set()


def read_since(client: TestClient) -> dict[str, str | None]:
    """When the streaming run's read of each dataset appeared, as run lineage shows it."""
    answer = client.get(f"/v3/runs/{RUN}/lineage", params={"direction": "upstream"}).json()
    return {
        edge["datasetVersion"].rsplit(":", 1)[-1]: edge["since"]
        for edge in answer["edges"]
        if edge["type"] == "read"
    }


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_history_shows_when_each_read_of_a_snapshot_run_appeared(
    client: TestClient, order: tuple[int, ...]
) -> None:
    events = streaming_run("COMPLETE_SNAPSHOT")
    for index in order:
        post(client, events[index])
    # b has been read since the snapshot an hour in, and every snapshot since stated it; a,
    # dropped by the last snapshot, is no longer read at all.
    assert read_since(client) == {"b": "2026-11-01T13:00:00+00:00"}


def test_a_read_a_snapshot_dropped_appears_again_when_stated_again(client: TestClient) -> None:
    first, second, third = streaming_run("COMPLETE_SNAPSHOT")
    third["inputs"] = [ds(NS, "a"), ds(NS, "b")]  # a comes back two hours in
    second["inputs"] = [ds(NS, "b")]  # the snapshot an hour in left a out
    post(client, first, second, third)
    assert read_since(client) == {
        "a": "2026-11-01T14:00:00+00:00",
        "b": "2026-11-01T13:00:00+00:00",
    }


def test_history_of_accumulating_reads_is_their_first_event(client: TestClient) -> None:
    post(client, *reversed(streaming_run("ACCUMULATIVE")))
    assert read_since(client) == {
        "a": "2026-11-01T12:00:00+00:00",
        "b": "2026-11-01T13:00:00+00:00",
    }


def test_a_rebuild_keeps_when_each_read_appeared(client: TestClient, store: Store) -> None:
    first, second, third = streaming_run("COMPLETE_SNAPSHOT")
    third["inputs"] = [ds(NS, "a"), ds(NS, "b")]
    for event in (third, first, second):
        post(client, event)
    before = read_since(client)
    assert before == {"a": "2026-11-01T12:00:00+00:00", "b": "2026-11-01T13:00:00+00:00"}
    rebuild(store)
    assert read_since(client) == before
