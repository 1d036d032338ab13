"""Field-operation scenarios shared by the field-lineage tests, and a transport that posts the
recorder's events to an in-process app, so tests record through the real recorder and the real
ingestion endpoint."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient
from openlineage.client.serde import Serde
from openlineage.client.transport.transport import Transport

from upstream import FieldOperation, Source

USERS = Source("myns", "user_data", "files contains user information")


def seed_operations(
    create_description: str = "creating unique id from the name field",
) -> list[FieldOperation]:
    """Seed 000's example, verbatim: read, parse, concat, drop, drop, create."""
    return [
        FieldOperation(
            "read", "Reading the data from the file", inputs=[USERS], outputs=["offset", "body"]
        ),
        FieldOperation.builder()
        .set_name("parse")
        .set_description("parsing the input body field")
        .add_input_field("body")
        .add_output("firstName")
        .add_output("lastName")
        .add_output("age")
        .add_output("city")
        .add_output("state")
        .build(),
        FieldOperation(
            "concat",
            "concatenating the first name and last name",
            inputs=["firstName", "lastName"],
            outputs=["name"],
        ),
        FieldOperation("drop", "deleting the first name field", inputs=["firstName"]),
        FieldOperation("drop", "deleting the last name field", inputs=["lastName"]),
        FieldOperation("create", create_description, inputs=["name"], outputs=["uniqueId"]),
    ]


def wide_operations(fields: int, rounds: int, source: Source | None = None) -> list[FieldOperation]:
    """`rounds` rounds over `fields` fields, each one all-to-all transform followed by one
    one-to-one transform per field, after one read of every field."""
    names = [f"f{i}" for i in range(fields)]
    ops = [FieldOperation("read", inputs=[source or Source("wide", "src")], outputs=names)]
    for r in range(1, rounds + 1):
        ops.append(FieldOperation(f"all{r}", inputs=names, outputs=names))
        ops.extend(
            FieldOperation(f"t{r}_{i}", inputs=[name], outputs=[name])
            for i, name in enumerate(names)
        )
    return ops


def as_document(
    operations: list[FieldOperation],
    destination: dict[str, Any],
    source: Source,
    *,
    job: str = "job",
    run_id: str | None = None,
) -> dict[str, Any]:
    """The seed's JSON document for `operations` that read only `source` and refer to fields
    by name: a source input is written `"source"`."""
    return {
        "destination": destination,
        "source": {
            "namespace": source.namespace,
            "name": source.name,
            "description": source.description,
        },
        "operations": [
            {
                "name": op.name,
                "description": op.description,
                "inputs": ["source" if isinstance(i, Source) else i for i in op.inputs],
                "outputs": list(op.outputs),
            }
            for op in operations
        ],
        "job": {"name": job},
        "run": {"runId": run_id or str(uuid.uuid4())},
    }


class AppTransport(Transport):
    """An openlineage-python transport posting to `POST /api/v1/lineage` of a TestClient."""

    kind = "upstream-test-app"

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Any) -> None:
        document = Serde.to_dict(event)
        self.events.append(document)
        response = self.client.post("/api/v1/lineage", json=document)
        assert response.status_code == 201, response.text


class ListTransport(Transport):
    """Keeps what would have been emitted."""

    kind = "upstream-test-list"

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Any) -> None:
        self.events.append(Serde.to_dict(event))
