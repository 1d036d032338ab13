"""The documents of Marquez's lineage graph nodes kept by the process between reads
(`upstream.query.marquez.node_documents`): a graph asked again reads none of them, and a
change written through another process — a new run, a new version, a version written before
a run read the dataset, a tag, a deletion and its revival — is in the next read, which
answers exactly as a process that kept nothing does. A read older than the kept documents,
or with a token that does not see everything, builds its own; the least recently used
documents go first."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection

from tests.builders import BASE_TIME, ds, hours, run_event
from tests.conftest import post
from upstream.model.access import EVERYTHING, Visibility
from upstream.query.marquez.lineage import lineage_graph
from upstream.query.marquez.node_documents import Build, NodeDocuments
from upstream.store.engine import Store

NS = "sales"
LOADER, BUILDER = (NS, "load_orders"), (NS, "build_summary")
JOB = "job:sales:build_summary"


@pytest.fixture
def reader(db_url: str) -> Iterator[Store]:
    """A second process's store: it keeps its documents between reads while `client`
    writes."""
    store = Store(db_url)
    yield store
    store.dispose()


def graph(store: Store, node: str = JOB, visibility: Visibility = EVERYTHING) -> Any:
    with store.read() as conn:
        return lineage_graph(conn, node, 5, 100, visibility=visibility)


def as_fresh(db_url: str, answer: Any, node: str = JOB) -> Any:
    """`answer` is what a process that kept nothing answers; the node documents, by id."""
    fresh = Store(db_url)
    try:
        assert answer == graph(fresh, node)
    finally:
        fresh.dispose()
    return {n["id"]: n["data"] for n in answer["graph"]}


def load(run_id: uuid.UUID, at: int) -> dict[str, Any]:
    return run_event(
        LOADER, run_id=str(run_id), time=BASE_TIME + hours(at), outputs=[ds(NS, "orders")]
    )


def build(run_id: uuid.UUID, at: int) -> dict[str, Any]:
    return run_event(
        BUILDER,
        run_id=str(run_id),
        time=BASE_TIME + hours(at),
        inputs=[ds(NS, "orders")],
        outputs=[ds(NS, "summary")],
    )


def test_a_graph_asked_again_reads_no_node_document(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    post(client, load(uuid.uuid4(), 0), build(uuid.uuid4(), 1))
    store, found = statements
    first = graph(store)
    found.clear()
    assert graph(store) == first
    documents = ("dataset_versions", "job_tags", "dataset_tags", "relations")
    assert [s for s in found if any(table in s for table in documents)] == []


def test_a_token_that_does_not_see_everything_keeps_nothing(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    post(client, load(uuid.uuid4(), 0), build(uuid.uuid4(), 1))
    store, found = statements
    scoped = Visibility((NS,))
    graph(store, visibility=scoped)
    found.clear()
    graph(store, visibility=scoped)
    assert [s for s in found if "dataset_versions" in s] != []


def test_the_next_read_sees_every_change(client: TestClient, reader: Store, db_url: str) -> None:
    first_load, first_build = uuid.uuid4(), uuid.uuid4()
    post(client, load(first_load, 0), build(first_build, 5))
    nodes = as_fresh(db_url, graph(reader))
    read = nodes[JOB]["latestRun"]["inputDatasetVersions"][0]["datasetVersionId"]["version"]
    assert nodes[JOB]["latestRun"]["id"] == str(first_build)

    # A new run of the job: its latest run.
    second_build = uuid.uuid4()
    post(client, build(second_build, 6))
    nodes = as_fresh(db_url, graph(reader))
    assert nodes[JOB]["latestRun"]["id"] == str(second_build)

    # A new version of the dataset, written before the job's latest run read it: the
    # dataset's current version, and the version that run read.
    post(client, load(uuid.uuid4(), 2))
    nodes = as_fresh(db_url, graph(reader))
    newer = nodes["dataset:sales:orders"]["currentVersion"]
    assert newer != read
    assert nodes[JOB]["latestRun"]["inputDatasetVersions"][0]["datasetVersionId"]["version"] == (
        newer
    )

    # Tags on a dataset and on a job.
    tagged = client.post(f"/api/v1/namespaces/{NS}/datasets/orders/tags/pii")
    assert tagged.status_code == 200, tagged.text
    tagged = client.post(f"/api/v1/namespaces/{NS}/jobs/build_summary/tags/daily")
    assert tagged.status_code == 200, tagged.text
    nodes = as_fresh(db_url, graph(reader))
    assert "pii" in nodes["dataset:sales:orders"]["tags"]
    assert "daily" in nodes[JOB]["tags"]

    # A deletion, and the event that revives what it deleted.
    assert client.delete(f"/api/v1/namespaces/{NS}/datasets/orders").status_code == 200
    assert "dataset:sales:orders" not in as_fresh(db_url, graph(reader))
    post(client, load(uuid.uuid4(), 3))
    assert not as_fresh(db_url, graph(reader))["dataset:sales:orders"]["deleted"]


def fake_documents(built: list[uuid.UUID]) -> Build:
    """A build of documents that notes the ids it was asked for."""

    def build(_conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Any]:
        built.extend(ids)
        return {i: {"id": str(i)} for i in ids}

    return build


def test_the_least_recently_used_documents_are_dropped_first(store: Store) -> None:
    kept, built = NodeDocuments(kept=2), list[uuid.UUID]()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with store.read() as conn:
        kept.documents(conn, 0, "dataset", [a, b], fake_documents(built))
        kept.documents(conn, 0, "dataset", [a], fake_documents(built))
        kept.documents(conn, 0, "dataset", [c], fake_documents(built))
        built.clear()
        kept.documents(conn, 0, "dataset", [a, b, c], fake_documents(built))
    assert built == [b]


def test_a_read_older_than_the_kept_documents_builds_its_own(store: Store) -> None:
    kept, built = NodeDocuments(), list[uuid.UUID]()
    a = uuid.uuid4()
    with store.read() as conn:
        kept.documents(conn, 5, "dataset", [a], fake_documents(built))
        kept.documents(conn, 3, "dataset", [a], fake_documents(built))
        kept.documents(conn, 3, "dataset", [a], fake_documents(built))
        kept.documents(conn, 5, "dataset", [a], fake_documents(built))
    assert built == [a, a, a]
