"""The recorder (design §3.5; issue 4 items 1 and 8): standard OpenLineage RunEvents through
openlineage-python's transports, START / per record / COMPLETE or FAIL, workflows and parents,
and validation that raises before anything is emitted."""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport

from tests.conftest import LiveServer
from tests.field_scenarios import USERS, ListTransport, seed_operations
from upstream import Destination, FieldOperation, LineageRecorder, Source
from upstream.model.facets import COMPONENT_FACET, FIELD_OPERATIONS_FACET, TEMPORARY_FACET

MYTABLE = Destination("myns", "mytableds")


def test_recorder_posts_over_http_to_a_live_server(live_server: LiveServer) -> None:
    recorder = LineageRecorder(url=live_server.url)
    with recorder.run("myns", "ETLMapReduce") as run:
        run.record(MYTABLE, seed_operations())
    recorder.close()
    base = f"{live_server.url}/v3/namespaces/myns/datasets/mytableds"
    body = httpx.get(f"{base}/fields/uniqueId/lineage").json()
    assert [[op["name"] for op in p["operations"]] for p in body["paths"]] == [
        ["read", "parse", "concat", "create"]
    ]
    assert [r["runId"] for r in body["paths"][0]["runs"]] == [str(run.run_id)]
    assert httpx.get(f"{base}/fields/firstName/lineage").status_code == 404


def test_events_are_start_record_complete_with_standard_lineage() -> None:
    transport = ListTransport()
    with LineageRecorder(transport=transport).run("myns", "ETLMapReduce") as run:
        run.record(MYTABLE, seed_operations())
    start, running, complete = transport.events
    assert [e["eventType"] for e in transport.events] == ["START", "RUNNING", "COMPLETE"]
    assert {e["run"]["runId"] for e in transport.events} == {str(run.run_id)}
    assert start["inputs"] == []
    assert start["outputs"] == []
    for event in (running, complete):
        assert event["schemaURL"].endswith("#/$defs/RunEvent")
        assert [(i["namespace"], i["name"]) for i in event["inputs"]] == [("myns", "user_data")]
        assert event["inputs"][0]["facets"]["documentation"]["description"] == USERS.description
        [output] = event["outputs"]
        assert (output["namespace"], output["name"]) == ("myns", "mytableds")
        operations = output["outputFacets"][FIELD_OPERATIONS_FACET]["operations"]
        assert [op["name"] for op in operations] == [
            "read",
            "parse",
            "concat",
            "drop",
            "drop",
            "create",
        ]
        assert operations[3]["inputs"] == [{"type": "field", "name": "firstName", "origin": 1}]
        assert [f["name"] for f in output["facets"]["schema"]["fields"]] == [
            "offset",
            "body",
            "age",
            "city",
            "state",
            "name",
            "uniqueId",
        ]
        [entry] = event["job"]["facets"]["lineage"]["entries"]
        assert (entry["type"], entry["name"]) == ("DATASET", "mytableds")
        assert "inputs" not in entry  # every source is reached by some field
        assert entry["fields"]["uniqueId"] == {
            "inputs": [
                {
                    "type": "DATASET",
                    "namespace": "myns",
                    "name": "user_data",
                    "field": "body",
                    "transformations": [{"type": "DIRECT", "subtype": "TRANSFORMATION"}],
                }
            ]
        }
        assert entry["fields"]["offset"]["inputs"][0]["transformations"] == [
            {"type": "DIRECT", "subtype": "IDENTITY"}
        ]
        assert event["job"]["facets"]["jobType"]["jobType"] == "JOB"


def test_an_escaping_exception_emits_fail_and_propagates() -> None:
    transport = ListTransport()
    recorder = LineageRecorder(transport=transport)

    def failing_program() -> None:
        with recorder.run("myns", "job") as run:
            run.record(MYTABLE, seed_operations())
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        failing_program()
    assert [e["eventType"] for e in transport.events] == ["START", "RUNNING", "FAIL"]
    assert transport.events[-1]["outputs"][0]["name"] == "mytableds"


def test_workflow_parent_component_and_temporary_reach_the_server(client: TestClient) -> None:
    from tests.field_scenarios import AppTransport

    transport = AppTransport(client)
    recorder = LineageRecorder(transport=transport)
    wf = recorder.run("myns", "EmpWorkflow", workflow=True)
    with wf, recorder.run("myns", "phase-1", parent=wf) as step:
        step.record(
            Destination("myns", "staging", temporary=True),
            seed_operations(),
            component="mapper",
        )
    events = transport.events
    assert events[0]["job"]["facets"]["jobType"]["jobType"] == "WORKFLOW"
    step_events = [e for e in events if e["job"]["name"] == "phase-1"]
    assert [e["eventType"] for e in step_events] == ["START", "RUNNING", "COMPLETE"]
    for event in step_events:
        parent = event["run"]["facets"]["parent"]
        assert parent["run"]["runId"] == str(wf.run_id)
        assert (parent["job"]["namespace"], parent["job"]["name"]) == ("myns", "EmpWorkflow")
    recorded = step_events[1]
    assert recorded["outputs"][0]["outputFacets"][TEMPORARY_FACET]["temporary"] is True
    assert recorded["outputs"][0]["outputFacets"][COMPONENT_FACET]["name"] == "mapper"
    assert recorded["inputs"][0]["inputFacets"][COMPONENT_FACET]["name"] == "mapper"
    # The server took them: the field's path, and the program's run inside the workflow run.
    body = client.get("/v3/namespaces/myns/datasets/staging/fields/age/lineage").json()
    assert [r["runId"] for r in body["paths"][0]["runs"]] == [str(step.run_id)]
    ops = client.get(
        "/v3/namespaces/myns/datasets/staging/lineage/fields/age/operations",
        params={"direction": "incoming"},
    ).json()
    assert ops["incoming"][0]["programs"][0]["job"] == {"namespace": "myns", "name": "phase-1"}


def test_file_transport_writes_events_the_server_accepts(
    tmp_path: Path, client: TestClient
) -> None:
    log = tmp_path / "events.jsonl"
    recorder = LineageRecorder(
        transport=FileTransport(FileConfig(log_file_path=str(log), append=True))
    )
    with recorder.run("myns", "ETLMapReduce") as run:
        run.record(MYTABLE, seed_operations())
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [e["eventType"] for e in events] == ["START", "RUNNING", "COMPLETE"]
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    body = client.get("/v3/namespaces/myns/datasets/mytableds/fields/offset/lineage").json()
    assert [r["runId"] for r in body["paths"][0]["runs"]] == [str(run.run_id)]


def test_console_transport_logs_the_events(caplog: pytest.LogCaptureFixture) -> None:
    recorder = LineageRecorder(transport=ConsoleTransport(ConsoleConfig()))
    console = "openlineage.client.transport.console"
    with caplog.at_level(logging.INFO, logger=console), recorder.run("myns", "ETLMapReduce") as run:
        run.record(MYTABLE, seed_operations())
    logged = [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "openlineage.client.transport.console"
    ]
    assert [e["eventType"] for e in logged] == ["START", "RUNNING", "COMPLETE"]
    assert logged[1]["run"]["runId"] == str(run.run_id)


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        (
            [FieldOperation("parse", "no read", inputs=["body"], outputs=["x"])],
            "operations[0]: operation 'parse' takes field 'body', which no earlier operation "
            "outputs",
        ),
        (
            [
                FieldOperation("read", inputs=[Source("ns", "s")], outputs=["a"]),
                FieldOperation("concat", inputs=["a", "b"], outputs=["c"]),
            ],
            "operations[1]: operation 'concat' takes field 'b', which no earlier operation outputs",
        ),
        ([FieldOperation("read", outputs=["a"])], "operations[0]: operation 'read' has no inputs"),
        (
            [FieldOperation("", inputs=[Source("ns", "s")], outputs=["a"])],
            "operations[0]: the operation name must not be empty",
        ),
        (
            [FieldOperation("read", inputs=[Source("ns", "s")], outputs=["a", " "])],
            "operations[0]: operation 'read' has an output with an empty name",
        ),
        (
            [FieldOperation("read", inputs=[Source("", "s")], outputs=["a"])],
            "operations[0]: operation 'read' reads a Source with an empty namespace or name",
        ),
        ([], "at least one operation is required"),
    ],
)
def test_invalid_operations_raise_and_emit_nothing(
    operations: list[FieldOperation], message: str
) -> None:
    transport = ListTransport()
    with LineageRecorder(transport=transport).run("myns", "job") as run:
        with pytest.raises(ValueError, match=re.escape(message)):
            run.record(MYTABLE, operations)
        assert [e["eventType"] for e in transport.events] == ["START"]
    # Leaving the block still completes the run, with nothing recorded.
    assert [e["eventType"] for e in transport.events] == ["START", "COMPLETE"]
    assert transport.events[-1]["outputs"] == []


def test_no_operation_reading_a_source_is_rejected() -> None:
    earlier = FieldOperation("read", inputs=[USERS], outputs=["body"])
    transport = ListTransport()
    run = LineageRecorder(transport=transport).run("myns", "job")
    with run, pytest.raises(ValueError, match="no operation reads a Source"):
        run.record(
            MYTABLE, [FieldOperation("copy", inputs=[earlier.output("body")], outputs=["b"])]
        )
    assert [e["eventType"] for e in transport.events] == ["START", "COMPLETE"]


def test_recorder_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="either url or transport"):
        LineageRecorder()
    with pytest.raises(ValueError, match="either url or transport"):
        LineageRecorder("http://127.0.0.1:5000", transport=ListTransport())
    recorder = LineageRecorder(transport=ListTransport())
    with pytest.raises(ValueError, match="namespace and job name"):
        recorder.run("myns", " ")
    run = recorder.run("myns", "job", run_id=uuid.UUID(int=7))
    assert run.run_id == uuid.UUID(int=7)
    with pytest.raises(ValueError, match="destination needs"):
        run.record(Destination("myns", ""), seed_operations())
    with pytest.raises(ValueError, match="component must not be empty"):
        run.record(MYTABLE, seed_operations(), component="")
