"""The seed's JSON document (`POST /v3/namespaces/{ns}/lineage/field-operations`) and the
`upstream_fieldOperations` facet posted directly: one validation, one ingestion path, the same
answers as the recorder's (design §3.5; issue 4 item 2). Both databases."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from openlineage.client.serde import Serde

from tests.builders import ds, run_event
from tests.field_scenarios import USERS, AppTransport, as_document, seed_operations
from upstream import Destination, LineageRecorder
from upstream.ingest.operations_document import operations_document_event
from upstream.ingest.operations_event import Recording, RunIdentity
from upstream.ingest.operations_event import run_event as recorder_event
from upstream.model.facets import FIELD_OPERATIONS_FACET
from upstream.model.field_operations import resolve

ENDPOINT = "/v3/namespaces/myns/lineage/field-operations"
MYTABLE = "/v3/namespaces/myns/datasets/mytableds"


def seed_document(run_id: str | None = None) -> dict[str, Any]:
    return as_document(
        seed_operations(), {"name": "mytableds"}, USERS, job="ETLMapReduce", run_id=run_id
    )


def test_the_document_becomes_the_recorders_event() -> None:
    run_id = uuid.uuid4()
    moment = datetime(2026, 11, 1, 12, tzinfo=UTC)
    document = {**seed_document(str(run_id)), "eventTime": moment.isoformat()}
    from_document = operations_document_event("myns", document)
    identity = RunIdentity("myns", "ETLMapReduce", run_id)
    recording = Recording(Destination("myns", "mytableds"), resolve(seed_operations()))
    assert from_document == Serde.to_dict(recorder_event(identity, "COMPLETE", moment, [recording]))


def test_document_and_recorder_give_the_same_paths(client: TestClient) -> None:
    response = client.post(ENDPOINT, json=seed_document())
    assert response.status_code == 201, response.text
    assert response.content == b""
    from_document = client.get(f"{MYTABLE}/fields/uniqueId/lineage").json()["paths"]
    with LineageRecorder(transport=AppTransport(client)).run("myns", "ETLMapReduce") as run:
        run.record(Destination("myns", "mytableds"), seed_operations())
    [path] = client.get(f"{MYTABLE}/fields/uniqueId/lineage").json()["paths"]
    assert path["operations"] == from_document[0]["operations"]
    assert len(path["runs"]) == 2  # one operation set (same checksum), linked to both runs
    assert path["runs"][0]["runId"] == str(run.run_id)
    assert client.get(f"{MYTABLE}/lineage/fields", params={"includeCurrent": "true"}).json() == [
        {"name": n, "lineage": True}
        for n in ["age", "body", "city", "name", "offset", "state", "uniqueId"]
    ]


def test_sources_by_name_and_namespaces_with_slashes(client: TestClient) -> None:
    document = {
        "destination": {"name": "joined", "fields": ["total"]},
        "sources": [{"name": "orders"}, {"namespace": "postgres://db:5432", "name": "rates"}],
        "operations": [
            {"name": "read", "inputs": ["orders"], "outputs": ["amount"]},
            {"name": "read", "inputs": ["rates"], "outputs": ["rate"]},
            {"name": "multiply", "inputs": ["amount", "rate"], "outputs": ["total"]},
        ],
        "job": "pricing",
        "run": {"runId": str(uuid.uuid4())},
    }
    response = client.post(
        "/v3/namespaces/s3%3A%2F%2Fbucket/lineage/field-operations", json=document
    )
    assert response.status_code == 201, response.text
    summary = client.get(
        "/v3/namespaces/s3%3A%2F%2Fbucket/datasets/joined/lineage/fields/total",
        params={"direction": "incoming"},
    ).json()
    assert summary == {
        "incoming": [
            {
                "dataset": {"namespace": "postgres://db:5432", "name": "rates"},
                "fields": ["rate"],
                "origins": {"rate": ["fieldOperations"]},
            },
            {
                "dataset": {"namespace": "s3://bucket", "name": "orders"},
                "fields": ["amount"],
                "origins": {"amount": ["fieldOperations"]},
            },
        ]
    }
    # The stated field list is the destination's fields.
    assert client.get(
        "/v3/namespaces/s3%3A%2F%2Fbucket/datasets/joined/lineage/fields",
        params={"includeCurrent": "true"},
    ).json() == [{"name": "total", "lineage": True}]


def test_invalid_documents_are_rejected_with_their_path_and_store_nothing(
    client: TestClient,
) -> None:
    good = seed_document()
    cases = [
        (
            {**good, "operations": [*good["operations"][:2], {"name": "x", "inputs": ["nope"]}]},
            "operations[2]",
            "operation 'x' takes field 'nope', which no earlier operation outputs",
        ),
        ({**good, "run": {"runId": "not-a-uuid"}}, "run.runId", "is not a UUID"),
        ({**good, "eventTime": "yesterday"}, "eventTime", "is not an ISO-8601"),
        ({**good, "destination": {"namespace": "myns"}}, "destination", "name must be"),
        ({**good, "job": {}}, "job", "name must be"),
        ({**good, "eventType": "DONE"}, "eventType", "must be one of"),
        (
            {**good, "operations": [{"name": "read", "inputs": ["body"], "outputs": ["a"]}]},
            "operations",
            "no operation reads a Source",
        ),
    ]
    for document, path, message in cases:
        response = client.post(ENDPOINT, json=document)
        assert response.status_code == 422, response.text
        assert any(
            e["path"] == path and message in e["message"] for e in response.json()["errors"]
        ), response.json()
    assert client.post(ENDPOINT, json=[good]).status_code == 422
    assert client.get(f"{MYTABLE}/lineage/fields").status_code == 404  # nothing was stored


def test_a_malformed_facet_on_an_event_is_located_and_nothing_is_stored(
    client: TestClient,
) -> None:
    operations = resolve(seed_operations()).to_json()
    operations[3]["inputs"] = [{"type": "field", "name": "firstName", "origin": 9}]
    event = run_event(
        ("myns", "ETLMapReduce"),
        inputs=[ds("myns", "user_data")],
        outputs=[
            {
                **ds("myns", "mytableds"),
                "outputFacets": {FIELD_OPERATIONS_FACET: {"operations": operations}},
            }
        ],
    )
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["path"] == (
        f"outputs[0].outputFacets.{FIELD_OPERATIONS_FACET}.operations[3].inputs[0]"
    )
    assert "origin 9 is not the position of an earlier operation" in error["message"]
    operations[3]["inputs"] = []
    response = client.post("/api/v1/lineage", json=event)
    assert response.json()["errors"][0]["path"] == (
        f"outputs[0].outputFacets.{FIELD_OPERATIONS_FACET}.operations[3]"
    )
    assert client.get(f"{MYTABLE}/lineage/fields").status_code == 404


def test_the_server_takes_the_openlineage_client_only_with_the_first_document() -> None:
    """Every server start and test process imports the app; the client is a third of a
    second of CPU that only a field-operations document needs."""
    loaded = (
        "import sys, upstream.api.app; "
        "print(sorted(m for m in sys.modules if m.startswith('openlineage.client'))[:1])"
    )
    answer = subprocess.run(
        [sys.executable, "-c", loaded], capture_output=True, text=True, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == "[]"
