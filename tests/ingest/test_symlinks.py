"""Symlinks (design §3.3): every identity of one dataset is one node in every answer, on both
databases, whichever order the events arrive in (docs/concepts.md states the rule).

The scenario: a Spark job `write_orders` writes `s3://bucket` `warehouse/orders`, whose
`symlinks` facet names the Hive table `hive://metastore` `sales.orders`; a second job
`report` reads `sales.orders` from the Hive namespace and writes `reports` `daily`.
"""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection

from tests.builders import (
    BASE_TIME,
    PRODUCER,
    column_lineage,
    dataset_event,
    ds,
    hours,
    iso,
    job_event,
    run_event,
    schema_facet,
)
from tests.conftest import post
from tests.readback import relations as stored_relations
from upstream.ingest.rebuild import rebuild
from upstream.ingest.service import prepare, store_facts
from upstream.store.engine import Store
from upstream.store.writer import WriteResult, write_facts

S3, ORDERS = "s3://bucket", "warehouse/orders"
HIVE, TABLE = "hive://metastore", "sales.orders"
REPORTS = "reports"
WRITER_RUN = "11111111-0000-4000-8000-000000000001"
READER_RUN = "11111111-0000-4000-8000-000000000002"
WINDOW = {"start": iso(BASE_TIME - hours(24)), "end": iso(BASE_TIME + hours(24))}


def symlinks(*names: tuple[str, str]) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
        "identifiers": [{"namespace": ns, "name": name, "type": "TABLE"} for ns, name in names],
    }


def writer() -> dict[str, Any]:
    """Spark writes the S3 path, and says it is the Hive table."""
    return run_event(
        ("spark", "write_orders"),
        run_id=WRITER_RUN,
        time=BASE_TIME - hours(2),
        inputs=[ds("pg://shop", "public.orders", schema=schema_facet(("id", "int")))],
        outputs=[
            ds(
                S3,
                ORDERS,
                symlinks=symlinks((HIVE, TABLE)),
                schema=schema_facet(("id", "int"), ("amount", "int")),
                columnLineage=column_lineage(
                    {"id": [("pg://shop", "public.orders", "id")]},
                ),
            )
        ],
    )


def reader() -> dict[str, Any]:
    """A job reads the Hive table (no symlinks of its own) and writes the daily report."""
    return run_event(
        ("spark", "report"),
        run_id=READER_RUN,
        time=BASE_TIME,
        inputs=[ds(HIVE, TABLE, schema=schema_facet(("id", "int"), ("amount", "int")))],
        outputs=[
            ds(
                REPORTS,
                "daily",
                schema=schema_facet(("order_id", "int")),
                columnLineage=column_lineage({"order_id": [(HIVE, TABLE, "id")]}),
            )
        ],
    )


@pytest.fixture(params=["symlink first", "symlink last"])
def order(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def dataset_path(namespace: str, name: str) -> str:
    return f"/v3/namespaces/{quote(namespace, safe='')}/datasets/{quote(name, safe='')}"


def marquez_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/datasets/{quote(name, safe='')}"


def lineage(client: TestClient, namespace: str, name: str, **params: Any) -> Any:
    return get(client, dataset_path(namespace, name) + "/lineage", **WINDOW, **params)


def relations(body: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(r["data"], r["program"], a) for r in body["relations"] for a in r["accesses"]}


ORDERS_KEY = f"dataset.{S3}.{ORDERS}"
UPSTREAM_OF_DAILY = {
    (f"dataset.{REPORTS}.daily", "job.spark.report", "write"),
    (ORDERS_KEY, "job.spark.report", "read"),
    (ORDERS_KEY, "job.spark.write_orders", "write"),
    ("dataset.pg://shop.public.orders", "job.spark.write_orders", "read"),
}


@pytest.fixture
def connected(client: TestClient, order: str) -> TestClient:
    """Both events stored, in the order of the `order` parameter."""
    post(client, *((writer(), reader()) if order == "symlink first" else (reader(), writer())))
    return client


def test_upstream_of_the_readers_output_reaches_the_writer(connected: TestClient) -> None:
    body = lineage(connected, REPORTS, "daily", direction="upstream", levels=2)
    assert relations(body) == UPSTREAM_OF_DAILY


def test_either_name_answers_as_one_node(connected: TestClient) -> None:
    expected = {
        (ORDERS_KEY, "job.spark.write_orders", "write"),
        (ORDERS_KEY, "job.spark.report", "read"),
        ("dataset.pg://shop.public.orders", "job.spark.write_orders", "read"),
        (f"dataset.{REPORTS}.daily", "job.spark.report", "write"),
    }
    for namespace, name in ((S3, ORDERS), (HIVE, TABLE)):
        assert relations(lineage(connected, namespace, name, levels=1)) == expected
        document = get(connected, marquez_path(namespace, name))
        assert (document["namespace"], document["name"]) == (S3, ORDERS)


def test_marquez_lineage_by_either_name(connected: TestClient) -> None:
    for node in (f"dataset:{S3}:{ORDERS}", f"dataset:{HIVE}:{TABLE}"):
        graph = get(connected, "/api/v1/lineage", nodeId=node, depth=2)["graph"]
        ids = {n["id"] for n in graph}
        assert ids == {
            f"dataset:{S3}:{ORDERS}",
            "dataset:pg://shop:public.orders",
            f"dataset:{REPORTS}:daily",
            "job:spark:write_orders",
            "job:spark:report",
        }


def test_column_lineage_crosses_the_alias(connected: TestClient) -> None:
    """reports.daily.order_id <- (Hive name) id; the S3 dataset's id <- pg id."""
    summary = get(
        connected,
        dataset_path(REPORTS, "daily") + "/lineage/fields/order_id",
        **WINDOW,
        direction="incoming",
        levels=2,
    )
    assert [
        (e["dataset"]["namespace"], e["dataset"]["name"], e["fields"]) for e in summary["incoming"]
    ] == [
        ("pg://shop", "public.orders", ["id"]),
        (S3, ORDERS, ["id"]),
    ]
    for namespace, name in ((S3, ORDERS), (HIVE, TABLE)):
        outgoing = get(
            connected,
            dataset_path(namespace, name) + "/lineage/fields/id",
            **WINDOW,
            direction="outgoing",
        )["outgoing"]
        assert [(e["dataset"]["name"], e["fields"]) for e in outgoing] == [("daily", ["order_id"])]
    node = f"datasetField:{HIVE}:{TABLE}:id"
    params = {"nodeId": node, "depth": 2, "withDownstream": "true"}
    graph = get(connected, "/api/v1/column-lineage", **params)["graph"]
    ids = {n["id"] for n in graph}
    assert f"datasetField:{S3}:{ORDERS}:id" in ids
    assert f"datasetField:{REPORTS}:daily:order_id" in ids
    assert not any(HIVE in i for i in ids)


def test_whole_graph_and_search_show_one_node(connected: TestClient) -> None:
    graph = get(connected, "/v3/lineage/graph")
    assert sorted(graph["data"]) == [
        "dataset.pg://shop.public.orders",
        f"dataset.{REPORTS}.daily",
        ORDERS_KEY,
    ]
    assert {(f["source"], f["target"]) for f in graph["flows"]} == {
        ("dataset.pg://shop.public.orders", ORDERS_KEY),
        (ORDERS_KEY, f"dataset.{REPORTS}.daily"),
    }
    found = get(connected, "/api/v1/search", q="orders")["results"]
    assert [(r["type"], r["namespace"], r["name"]) for r in found if r["type"] == "DATASET"] == [
        ("DATASET", "pg://shop", "public.orders"),
        ("DATASET", S3, ORDERS),
    ]
    listed = get(connected, f"/api/v1/namespaces/{quote(HIVE, safe='')}/datasets")
    assert listed["datasets"] == []


def test_a_rebuild_gives_the_same_graph(connected: TestClient, store: Store) -> None:
    before = get(connected, "/v3/lineage/graph")
    rebuild(store)
    assert get(connected, "/v3/lineage/graph") == before
    body = lineage(connected, REPORTS, "daily", direction="upstream", levels=2)
    assert relations(body) == UPSTREAM_OF_DAILY


# -- the rules where claims meet ------------------------------------------------------------


def claimant(namespace: str, name: str, *names: tuple[str, str], run: str) -> dict[str, Any]:
    return run_event(
        ("spark", f"write_{name}"),
        run_id=run,
        outputs=[ds(namespace, name, symlinks=symlinks(*names))],
    )


def read_of(namespace: str, name: str) -> dict[str, Any]:
    return run_event(("spark", "consumer"), inputs=[ds(namespace, name)])


def seeds(client: TestClient, namespace: str, name: str) -> set[str]:
    """The datasets one hop upstream of the lookup (by any name)."""
    body = lineage(client, namespace, name, direction="upstream", levels=1)
    return {r["data"] for r in body["relations"]}


def test_two_datasets_that_name_each_other_are_one_the_smallest_named(
    client: TestClient,
) -> None:
    """a names b and b names a: both reported, so the smaller identity, (s3://a, t), stands."""
    post(
        client,
        claimant("s3://b", "t", ("s3://a", "t"), run="22222222-0000-4000-8000-000000000001"),
        claimant("s3://a", "t", ("s3://b", "t"), run="22222222-0000-4000-8000-000000000002"),
        read_of("s3://b", "t"),
    )
    for namespace in ("s3://a", "s3://b"):
        document = get(client, marquez_path(namespace, "t"))
        assert (document["namespace"], document["name"]) == ("s3://a", "t")
        body = lineage(client, namespace, "t", levels=1)
        assert relations(body) == {
            ("dataset.s3://a.t", "job.spark.write_t", "write"),
            ("dataset.s3://a.t", "job.spark.consumer", "read"),
        }
    graph = get(client, "/v3/lineage/graph")
    assert sorted(graph["data"]) == ["dataset.s3://a.t"]


def test_an_alias_claimed_by_two_datasets_joins_them(client: TestClient) -> None:
    """s3://x and gs://y both say they are hive `t`: one group of three, canonical the
    smaller reporter (gs://y sorts before s3://x). A read of `t` before either claim, and a
    read of s3://x, end at that one node."""
    post(
        client,
        read_of(HIVE, "t"),
        claimant("s3://x", "t", (HIVE, "t"), run="33333333-0000-4000-8000-000000000001"),
        read_of("s3://x", "t"),
        claimant("gs://y", "t", (HIVE, "t"), run="33333333-0000-4000-8000-000000000002"),
    )
    for namespace in (HIVE, "s3://x", "gs://y"):
        document = get(client, marquez_path(namespace, "t"))
        assert (document["namespace"], document["name"]) == ("gs://y", "t")
    body = lineage(client, "gs://y", "t", levels=1)
    assert relations(body) == {
        ("dataset.gs://y.t", "job.spark.write_t", "write"),
        ("dataset.gs://y.t", "job.spark.consumer", "read"),
    }
    assert {r["runs"][0] for r in body["relations"]} >= {
        "33333333-0000-4000-8000-000000000001",
        "33333333-0000-4000-8000-000000000002",
    }
    graph = get(client, "/v3/lineage/graph")
    assert sorted(graph["data"]) == ["dataset.gs://y.t"]


def test_declared_lineage_of_an_alias_is_relinked(client: TestClient) -> None:
    """A JobEvent declares a read of the Hive name before the symlink is known; a
    DatasetEvent about the Hive name stays a lookup of the same dataset."""
    post(
        client,
        job_event(("etl", "declared"), inputs=[ds(HIVE, TABLE)], outputs=[ds("etl", "out")]),
        dataset_event(HIVE, TABLE),
        writer(),
    )
    body = lineage(client, "etl", "out", direction="upstream", levels=2)
    assert (ORDERS_KEY, "job.etl.declared", "read") in relations(body)
    assert (ORDERS_KEY, "job.spark.write_orders", "write") in relations(body)


def test_unknown_names_still_answer_404(client: TestClient) -> None:
    post(client, writer())
    assert client.get(marquez_path(HIVE, "sales.missing")).status_code == 404
    assert client.get(dataset_path(HIVE, "sales.missing") + "/lineage").status_code == 404


def test_an_alias_no_event_read_still_finds_the_dataset(client: TestClient) -> None:
    """Only the writer is stored: the Hive namespace was never named by an event, yet the
    Hive name looks up the S3 dataset everywhere."""
    post(client, writer())
    document = get(client, marquez_path(HIVE, TABLE))
    assert (document["namespace"], document["name"]) == (S3, ORDERS)
    body = lineage(client, HIVE, TABLE, direction="upstream", levels=1)
    assert relations(body) == {
        (ORDERS_KEY, "job.spark.write_orders", "write"),
        ("dataset.pg://shop.public.orders", "job.spark.write_orders", "read"),
    }
    graph = get(client, "/api/v1/lineage", nodeId=f"dataset:{HIVE}:{TABLE}", depth=1)["graph"]
    assert f"dataset:{S3}:{ORDERS}" in {n["id"] for n in graph}
    assert client.get(f"/api/v1/namespaces/{quote(HIVE, safe='')}").status_code == 404


def test_a_claim_stated_again_changes_nothing(connected: TestClient) -> None:
    """A later run of the writer states the same symlink: the groups and the graph stand."""
    before = get(connected, "/v3/lineage/graph")
    again = writer()
    again["run"]["runId"] = "11111111-0000-4000-8000-000000000003"
    post(connected, again)
    after = get(connected, "/v3/lineage/graph")
    assert sorted(after["data"]) == sorted(before["data"])
    assert {(f["source"], f["target"]) for f in after["flows"]} == {
        (f["source"], f["target"]) for f in before["flows"]
    }
    body = lineage(connected, REPORTS, "daily", direction="upstream", levels=2)
    assert relations(body) == UPSTREAM_OF_DAILY


def test_a_read_committed_while_the_claim_is_written_still_connects(
    client: TestClient, store: Store
) -> None:
    """The reader's transaction is open (its rows not yet visible) when the writer's claim
    arrives: the claim waits for it and then relinks its rows, so the read connects."""
    started, release = threading.Event(), threading.Event()
    read, write = reader(), writer()
    # The two writes share no row and no run lock to wait on (locks key on an id's top half).
    read["job"]["namespace"] = "reporting"
    read["run"]["runId"], write["run"]["runId"] = str(uuid.uuid4()), str(uuid.uuid4())

    def hold_open(conn: Connection) -> WriteResult:
        result = write_facts(conn, prepare([read], batch=False), datetime.now(UTC))
        started.set()
        release.wait(10)
        return result

    with ThreadPoolExecutor(2) as pool:
        reading = pool.submit(store.write, hold_open)
        assert started.wait(10)
        claiming = pool.submit(store_facts, store, prepare([write], batch=False))
        time.sleep(0.5)
        assert not claiming.done()  # it waits for the open read
        release.set()
        reading.result(10)
        claiming.result(10)
    body = lineage(client, REPORTS, "daily", direction="upstream", levels=2)
    assert relations(body) == {
        (data, program.replace("job.spark.report", "job.reporting.report"), access)
        for data, program, access in UPSTREAM_OF_DAILY
    }


def test_a_run_that_read_the_alias_keeps_what_its_later_event_wrote(
    client: TestClient, store: Store
) -> None:
    """START reads the Hive table; COMPLETE writes the S3 path and says it is that table.
    The run is derived again (its read names the S3 path now), and keeps its write."""
    run_id = str(uuid.uuid4())
    job = ("spark", "compact_orders")
    start = run_event(job, run_id=run_id, event_type="START", inputs=[ds(HIVE, TABLE)])
    complete = run_event(
        job,
        run_id=run_id,
        time=BASE_TIME + hours(1),
        outputs=[ds(S3, ORDERS, symlinks=symlinks((HIVE, TABLE)))],
    )
    post(client, start, complete)
    assert stored_relations(store) == {
        (f"{S3}/{ORDERS}", "spark/compact_orders", "read", run_id),
        (f"{S3}/{ORDERS}", "spark/compact_orders", "write", run_id),
    }
