"""`upstream db rebuild` changes no answer, byte for byte, ingestion times included: a row
derived from an event carries the time recorded with that event (when it was received),
whatever the grouping of the events in the transactions that derive it.

A rebuild replays up to 500 events in one transaction; the posts here were received in
separate transactions at different moments, and one of them is a two-event batch (a run's
START and COMPLETE), which is what moved a dataset version's `createdAt` from the START to
the COMPLETE.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, column_lineage, dataset_event, ds, job_event, run_event
from upstream.ingest.rebuild import rebuild
from upstream.model.json_text import content_key
from upstream.store import schema as t
from upstream.store.engine import Store

NS = "history"
#: Fixed, so the two-event batch's COMPLETE has the smaller content key (checked below).
RUNS = (
    "a1a1a1a1-0000-4000-8000-000000000004",
    "b2b2b2b2-0000-4000-8000-000000000002",
    "c3c3c3c3-0000-4000-8000-000000000003",
)
#: The derived tables whose rows carry times recorded with an event.
TIMED_TABLES = (
    "namespaces",
    "jobs",
    "datasets",
    "runs",
    "dataset_versions",
    "lineage_sets",
    "lineage_links",
    "operation_sets",
)
WINDOW = {"start": "2026-10-01T00:00:00Z", "end": "2026-12-31T00:00:00Z", "levels": 5}


def _posts() -> list[Any]:
    """Posts, in order: each is one event or a batch of events."""
    first, second, third = RUNS
    at = BASE_TIME

    def event(job: str, run_id: str, kind: str, minutes: int, **io: Any) -> dict[str, Any]:
        return run_event(
            (NS, job), run_id=run_id, event_type=kind, time=at + timedelta(minutes=minutes), **io
        )

    columns = column_lineage({"id": [(NS, "raw", "id")]})
    load = {"inputs": [ds(NS, "raw")], "outputs": [ds(NS, "clean", columnLineage=columns)]}
    report = {"inputs": [ds(NS, "clean")], "outputs": [ds(NS, "report")]}
    return [
        [event("load", first, "START", 0, **load), event("load", first, "COMPLETE", 5, **load)],
        event("report", second, "START", 10, **report),
        event("load", third, "START", 20, **load),
        event("report", second, "COMPLETE", 15, **report),
        event("load", third, "COMPLETE", 25, **load),
        job_event((NS, "planned"), time=at, inputs=[ds(NS, "report")], outputs=[ds(NS, "deck")]),
        dataset_event(NS, "deck"),
        [event("report", second, "RUNNING", 12, **report), event("load", first, "FAIL", 6)],
    ]


def _runs_of(client: TestClient) -> list[str]:
    runs: list[str] = []
    for job in ("load", "report"):
        answer = client.get(f"/api/v1/namespaces/{NS}/jobs/{job}/runs").json()
        runs.extend(run["id"] for run in answer["runs"])
    return sorted(runs)


def recorded_answers(client: TestClient) -> dict[str, str]:
    """The text of every answer about what was posted, times and all."""
    paths = [
        "/api/v1/namespaces",
        f"/api/v1/namespaces/{NS}",
        f"/api/v1/namespaces/{NS}/datasets",
        f"/api/v1/namespaces/{NS}/jobs",
        "/api/v1/sources",
        "/api/v1/search?q=load",
        "/api/v1/search?q=clean",
        f"/api/v1/column-lineage?nodeId=dataset:{NS}:clean",
        "/v3/lineage/graph",
    ]
    for name in ("raw", "clean", "report", "deck"):
        base = f"/api/v1/namespaces/{NS}/datasets/{name}"
        paths += [base, f"{base}/versions"]
        versions = client.get(f"{base}/versions").json()["versions"]
        paths += [f"{base}/versions/{v['version']}" for v in versions]
        paths.append(f"/v3/namespaces/{NS}/datasets/{name}/lineage")
    for job in ("load", "report", "planned"):
        base = f"/api/v1/namespaces/{NS}/jobs/{job}"
        paths += [base, f"{base}/versions", f"{base}/runs"]
        paths.append(f"/v3/namespaces/{NS}/jobs/{job}/lineage")
    for run_id in _runs_of(client):
        paths += [f"/api/v1/jobs/runs/{run_id}", f"/v3/runs/{run_id}/lineage"]
    answers: dict[str, str] = {}
    for path in paths:
        params = WINDOW if path.startswith("/v3/namespaces") else None
        response = client.get(path, params=params)
        assert response.status_code == 200, (path, response.text)
        answers[path] = response.text
    return answers


def timed_rows(store: Store) -> dict[str, list[str]]:
    """Every row of the tables that keep times, as text, in a stable order."""
    found: dict[str, list[str]] = {}
    with store.read() as conn:
        for name in TIMED_TABLES:
            rows = conn.execute(sa.select(t.metadata.tables[name])).mappings()
            found[name] = sorted(repr(sorted(row.items())) for row in rows)
    return found


def test_the_two_event_batch_is_stored_out_of_its_order_by_key() -> None:
    """The premise of the test below: sorted by content key, as events were once inserted
    (so given their seq), the batch's COMPLETE comes before its START."""
    start, complete = _posts()[0]
    assert content_key(complete) < content_key(start)


def test_a_rebuild_leaves_every_answer_byte_identical(client: TestClient, store: Store) -> None:
    for post in _posts():
        response = client.post("/api/v1/lineage", json=post)
        assert response.status_code == 201, response.text
    before, rows_before = recorded_answers(client), timed_rows(store)
    assert '"createdAt"' in before[f"/api/v1/namespaces/{NS}/datasets/clean/versions"]
    rebuild(store)
    after = recorded_answers(client)
    assert timed_rows(store) == rows_before
    changed = {path: (before[path], after[path]) for path in before if before[path] != after[path]}
    assert changed == {}
