"""`GET /api/v1/events/{namespace}`: the events whose job, dataset (a dataset event's), or
any input or output is in the namespace, found by the namespaces each event keeps
(`events.io_namespaces`) rather than by reading the stored events; a namespace named only
by a parent job or a facet finds nothing."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event

RUN = "00000000-0000-4000-8000-0000000000b1"
PARENT_RUN = "00000000-0000-4000-8000-0000000000b2"
JOB_EVENT_TIME = (BASE_TIME + hours(2)).isoformat().replace("+00:00", "Z")
DATASET_EVENT_TIME = (BASE_TIME + hours(3)).isoformat().replace("+00:00", "Z")


def _events() -> list[dict[str, Any]]:
    symlinked = ds("lake", "orders")
    symlinked["facets"] = {
        "symlinks": {
            "_producer": "https://example.com/producer",
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
            "identifiers": [{"namespace": "catalog", "name": "orders", "type": "TABLE"}],
        }
    }
    run = run_event(
        ("jobs", "load"),
        run_id=RUN,
        time=BASE_TIME + hours(1),
        inputs=[symlinked],
        outputs=[ds("warehouse", "orders"), ds("lake", "orders_copy")],
        parent=(("scheduler", "daily"), PARENT_RUN),
    )
    producer = run["producer"]
    schema = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
    job_event = {
        "eventTime": JOB_EVENT_TIME,
        "job": {"namespace": "declared", "name": "report"},
        "inputs": [{"namespace": "marts", "name": "sales"}],
        "outputs": [],
        "producer": producer,
        "schemaURL": f"{schema}#/$defs/JobEvent",
    }
    dataset_event = {
        "eventTime": DATASET_EVENT_TIME,
        "dataset": {"namespace": "files", "name": "drop.csv"},
        "producer": producer,
        "schemaURL": f"{schema}#/$defs/DatasetEvent",
    }
    return [run, job_event, dataset_event]


def _found(client: TestClient, namespace: str) -> list[str]:
    """What each event of `namespace` is: its run id, or its job's or dataset's name."""
    events = client.get(f"/api/v1/events/{namespace}").json()["events"]
    return [
        e["run"]["runId"] if "run" in e else (e.get("job") or e["dataset"])["name"] for e in events
    ]


def test_events_are_found_by_their_job_dataset_inputs_and_outputs(client: TestClient) -> None:
    assert client.post("/api/v1/lineage", json=_events()).status_code in (200, 201)
    assert _found(client, "jobs") == [RUN]
    assert _found(client, "lake") == [RUN]  # an input, and an output
    assert _found(client, "warehouse") == [RUN]
    assert _found(client, "declared") == ["report"]
    assert _found(client, "marts") == ["report"]
    assert _found(client, "files") == ["drop.csv"]
    # Named only by the parent job, or by a symlink facet: not the event's namespace.
    assert _found(client, "scheduler") == []
    assert _found(client, "catalog") == []
    assert _found(client, "nowhere") == []
