"""Run lineage (design §4.5) says when each read and write appeared and which version the
producer named from the relations the process's index holds: once the index is current, an
answer reads no relation from the database, only the runs it shows."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event
from tests.conftest import post
from upstream.query.graph_index.index import graph_of
from upstream.query.run_lineage import RunLineageParams, run_lineage
from upstream.store.engine import Store

NS = "lake"
WRITER, READER = uuid.uuid4(), uuid.uuid4()


def snapshot(name: str) -> dict[str, Any]:
    return {"version": {"datasetVersion": name}}


def test_since_and_named_versions_come_from_the_index(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """`snap` writes snapshot v1 of `t` (START at 12:00, COMPLETE at 13:00); `audit` reads
    v1 (START at 14:00, COMPLETE at 15:00). Each edge appeared with its run's START."""
    events = []
    for job, run, start, side in (("snap", WRITER, 0, "outputs"), ("audit", READER, 2, "inputs")):
        for kind, at in (("START", start), ("COMPLETE", start + 1)):
            events.append(
                run_event(
                    (NS, job),
                    run_id=str(run),
                    event_type=kind,
                    time=BASE_TIME + hours(at),
                    **{side: [ds(NS, "t", **snapshot("v1"))]},
                )
            )
    post(client, *events)
    store, found = statements
    with store.read() as conn:
        graph_of(conn)
    found.clear()
    with store.read() as conn:
        body = run_lineage(conn, RunLineageParams(READER, "upstream"), max_nodes=100)
    assert [(e["type"], e["run"], e["since"]) for e in body["edges"]] == [
        ("read", str(READER), "2026-11-01T14:00:00+00:00"),
        ("write", str(WRITER), "2026-11-01T12:00:00+00:00"),
    ]
    assert [v["producerVersion"] for v in body["datasetVersions"]] == ["v1"]
    assert [s for s in found if "FROM relations" in s] == []
