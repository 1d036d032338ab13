"""What Marquez's lineage graph reads for its nodes (design §4.4). Its nodes' documents leave
facets out, so of a dataset's or job's facets only what the documents still show is read —
owners, tags, a job's source location — never the rest (a `schema`, a job's `sql`: most of
the row); and the datasets each job and run touched are named from the names the process
keeps, not by joining every dataset into each read; a dataset's newest version and when the
latest completed run that wrote it ended come from one read of its versions."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event
from tests.conftest import post
from tests.ingest.test_owners_and_tags import SCHEMA, ownership, tags
from upstream.model.identity import DatasetRef, stable_id
from upstream.query.marquez.lineage import lineage_graph
from upstream.store.engine import Store

NS = "sales"
JOB = "job:sales:build_orders"
SQL = {"query": "INSERT INTO orders SELECT * FROM raw -- " + "x" * 2000}
SOURCE = {"type": "git", "url": "https://git.example.com/etl/build_orders.py"}


def build_orders() -> dict[str, Any]:
    """`build_orders` reads `raw` and writes `orders`, with bulky facets beside the owners,
    tags and source location its documents show."""
    return run_event(
        (NS, "build_orders"),
        inputs=[ds(NS, "raw")],
        outputs=[
            ds(
                NS,
                "orders",
                schema=SCHEMA,
                ownership=ownership("Dataset", {"name": "team:sales-data", "type": "MAINTAINER"}),
                tags=tags(
                    "Dataset",
                    {"key": "domain", "value": "sales"},
                    {"key": "pii", "value": "true", "field": "email"},
                ),
            )
        ],
        job_facets={
            "sql": SQL,
            "sourceCodeLocation": SOURCE,
            "ownership": ownership("Job", {"name": "team:platform"}),
            "tags": tags("Job", {"key": "schedule", "value": "daily"}),
        },
    )


def whole_facets(statement: str) -> list[str]:
    """The places `statement` reads a dataset's or job's `facets` column whole, rather
    than one member of it (`->` on PostgreSQL, `JSON_EXTRACT` on SQLite)."""
    return [
        m.group(0)
        for m in re.finditer(r"(JSON_EXTRACT\()?\b(datasets|jobs)\.facets\b(\s*->)?", statement)
        if not (m.group(1) or m.group(3))
    ]


def test_the_graph_shows_owners_tags_and_location_and_reads_no_other_facet(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    post(client, build_orders())
    store, found = statements
    with store.read() as conn:
        graph = lineage_graph(conn, JOB, 1, 100)
    nodes = {node["id"]: node["data"] for node in graph["graph"]}
    job, orders = nodes[JOB], nodes["dataset:sales:orders"]
    assert "facets" not in job
    assert "facets" not in orders
    assert job["location"] == SOURCE["url"]
    assert job["owners"] == [{"name": "team:platform", "type": None}]
    assert job["tags"] == ["schedule:daily"]
    assert orders["owners"] == [{"name": "team:sales-data", "type": "MAINTAINER"}]
    assert orders["tags"] == ["domain:sales"]
    assert [(f["name"], f["tags"]) for f in orders["fields"]] == [("id", []), ("email", ["pii"])]
    assert job["inputs"] == [{"namespace": NS, "name": "raw"}]
    assert job["outputs"] == [{"namespace": NS, "name": "orders"}]
    assert nodes["dataset:sales:raw"]["owners"] == []
    assert [s for s in found if whole_facets(s)] == []


def test_jobs_and_runs_name_their_datasets_without_a_join(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    post(client, build_orders())
    store, found = statements
    with store.read() as conn:
        graph = lineage_graph(conn, JOB, 1, 100)
    run = next(node for node in graph["graph"] if node["id"] == JOB)["data"]["latestRun"]
    assert [v["datasetVersionId"]["name"] for v in run["inputDatasetVersions"]] == ["raw"]
    assert [v["datasetVersionId"]["name"] for v in run["outputDatasetVersions"]] == ["orders"]
    assert [s for s in found if re.search(r"JOIN datasets\b", s)] == []


def test_the_newest_version_and_the_last_completed_write_come_from_one_read(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    completed, failed = uuid.uuid4(), uuid.uuid4()
    loader = (NS, "load_orders")
    post(client, run_event(loader, run_id=str(completed), outputs=[ds(NS, "orders")]))
    later = BASE_TIME + hours(1)
    post(
        client,
        run_event(
            loader, run_id=str(failed), event_type="FAIL", time=later, outputs=[ds(NS, "orders")]
        ),
    )
    store, found = statements
    with store.read() as conn:
        graph = lineage_graph(conn, "dataset:sales:orders", 1, 100)
    orders = next(n for n in graph["graph"] if n["id"] == "dataset:sales:orders")["data"]
    # The failed run wrote the newest version; only the completed one modified the data.
    assert orders["currentVersion"] == str(
        stable_id("dataset_version", DatasetRef(NS, "orders").id, failed)
    )
    assert orders["lastModifiedAt"] == "2026-11-01T12:00:00Z"
    # One read for the datasets' versions, one for those the latest run read and wrote.
    assert len([s for s in found if "dataset_versions" in s]) == 2
