"""The Marquez-compatible API over HTTP (design §4.4): lineage graphs, column lineage, search,
events, node ids, percent-encoded paths, pagination and errors. Expected values are worked out
by hand from the events each test posts."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_event,
    dataset_input,
    ds,
    hours,
    job_entry,
    job_input,
    lineage_facet,
    run_event,
    schema_facet,
)
from tests.conftest import post
from upstream.api.app import create_app
from upstream.settings import Settings

W = "postgresql://warehouse"
SUMMARIES = ("https://example.com/jobs", "build_summaries")
PG = "postgres://db.example.com:5432"


def lineage(client: TestClient, node_id: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/lineage", params={"nodeId": node_id, **params})
    assert response.status_code == 200, response.text
    graph = dict(response.json())
    assert_consistent(graph)
    return graph


def assert_consistent(graph: dict[str, Any]) -> None:
    """Nodes sorted and unique; every edge joins two nodes of the graph and is listed as an
    out-edge of its origin and an in-edge of its destination, and nowhere else."""
    ids = [node["id"] for node in graph["graph"]]
    assert ids == sorted(set(ids))
    outgoing, incoming = [], []
    for node in graph["graph"]:
        for edge in node["outEdges"]:
            assert edge["origin"] == node["id"]
            outgoing.append((edge["origin"], edge["destination"]))
        for edge in node["inEdges"]:
            assert edge["destination"] == node["id"]
            incoming.append((edge["origin"], edge["destination"]))
    assert sorted(outgoing) == sorted(incoming)
    assert len(set(outgoing)) == len(outgoing)
    assert {end for edge in outgoing for end in edge} <= set(ids)


def edges(graph: dict[str, Any]) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per node: its in-edges and out-edges as (other end, sources or targets)."""
    result = {}
    for node in graph["graph"]:
        incoming = [(e["origin"], e.get("sources", e.get("targets"))) for e in node["inEdges"]]
        outgoing = [
            (e["destination"], e.get("sources", e.get("targets"))) for e in node["outEdges"]
        ]
        result[node["id"]] = (incoming, outgoing)
    return result


def seed_003_event() -> dict[str, Any]:
    """Seed 003: one job reads customers and orders and writes two summaries independently."""
    return run_event(
        SUMMARIES,
        inputs=[ds(W, "raw.customers"), ds(W, "raw.orders")],
        outputs=[ds(W, "analytics.customer_summary"), ds(W, "analytics.order_summary")],
        job_facets=lineage_facet(
            dataset_entry(W, "analytics.customer_summary", [dataset_input(W, "raw.customers")]),
            dataset_entry(W, "analytics.order_summary", [dataset_input(W, "raw.orders")]),
        ),
    )


JOB_ID = "job:https://example.com/jobs:build_summaries"
CUSTOMERS, ORDERS = f"dataset:{W}:raw.customers", f"dataset:{W}:raw.orders"
CUSTOMER_SUMMARY = f"dataset:{W}:analytics.customer_summary"
ORDER_SUMMARY = f"dataset:{W}:analytics.order_summary"


def test_seed_003_job_shows_its_two_real_flows(client: TestClient) -> None:
    post(client, seed_003_event())
    graph = lineage(client, JOB_ID)
    assert graph["truncated"] is False
    assert [(n["id"], n["type"]) for n in graph["graph"]] == [
        (CUSTOMER_SUMMARY, "DATASET"),
        (ORDER_SUMMARY, "DATASET"),
        (CUSTOMERS, "DATASET"),
        (ORDERS, "DATASET"),
        (JOB_ID, "JOB"),
    ]
    assert edges(graph) == {
        CUSTOMER_SUMMARY: ([(JOB_ID, [CUSTOMERS])], []),
        ORDER_SUMMARY: ([(JOB_ID, [ORDERS])], []),
        CUSTOMERS: ([], [(JOB_ID, [CUSTOMER_SUMMARY])]),
        ORDERS: ([], [(JOB_ID, [ORDER_SUMMARY])]),
        JOB_ID: (
            [(CUSTOMERS, [CUSTOMER_SUMMARY]), (ORDERS, [ORDER_SUMMARY])],
            [(CUSTOMER_SUMMARY, [CUSTOMERS]), (ORDER_SUMMARY, [ORDERS])],
        ),
    }
    job = graph["graph"][-1]["data"]
    assert job["id"] == {"namespace": SUMMARIES[0], "name": SUMMARIES[1]}
    assert graph["graph"][0]["data"]["id"] == {"namespace": W, "name": "analytics.customer_summary"}

    # From one summary, only the input that really feeds it is upstream.
    around_summary = lineage(client, CUSTOMER_SUMMARY)
    assert edges(around_summary) == {
        CUSTOMER_SUMMARY: ([(JOB_ID, [CUSTOMERS])], []),
        CUSTOMERS: ([], [(JOB_ID, [CUSTOMER_SUMMARY])]),
        JOB_ID: ([(CUSTOMERS, [CUSTOMER_SUMMARY])], [(CUSTOMER_SUMMARY, [CUSTOMERS])]),
    }


def test_outputs_of_every_run_are_shown(client: TestClient) -> None:
    job = ("etl", "loader")
    post(
        client,
        run_event(job, time=BASE_TIME, inputs=[ds("db", "a")], outputs=[ds("db", "b")]),
        run_event(job, time=BASE_TIME + hours(1), inputs=[ds("db", "a")], outputs=[ds("db", "c")]),
    )
    graph = lineage(client, "dataset:db:a")
    assert edges(graph) == {
        "dataset:db:a": ([], [("job:etl:loader", ["dataset:db:b", "dataset:db:c"])]),
        "dataset:db:b": ([("job:etl:loader", ["dataset:db:a"])], []),
        "dataset:db:c": ([("job:etl:loader", ["dataset:db:a"])], []),
        "job:etl:loader": (
            [("dataset:db:a", ["dataset:db:b", "dataset:db:c"])],
            [("dataset:db:b", ["dataset:db:a"]), ("dataset:db:c", ["dataset:db:a"])],
        ),
    }
    job_doc = graph["graph"][-1]["data"]
    assert job_doc["outputs"] == [
        {"namespace": "db", "name": "b"},
        {"namespace": "db", "name": "c"},
    ]
    assert job_doc["latestRun"]["state"] == "COMPLETED"


def test_grandmas_apple_pie_shows_both_apple_pickings(
    client: TestClient, fixtures_dir: Path
) -> None:
    """Marquez's apples story: the second picking (crab apples) and the extra sugar explain the
    off pie. Marquez draws only the latest versions; here both pickings stay upstream, and only
    what really fed the pie (not the cider or the vinegar) is walked."""
    stories = sorted((fixtures_dir / "marquez/apples").glob("*.json"))
    post(client, *(json.loads(path.read_text()) for path in stories))
    graph = lineage(client, "dataset:grandmas.kitchen:apple.pie")
    k = "grandmas.kitchen"
    assert [n["id"] for n in graph["graph"]] == [
        "dataset:backyard:crab.apples",
        "dataset:cupboard:sugar",
        f"dataset:{k}:apple.filling",
        f"dataset:{k}:apple.pie",
        f"dataset:{k}:apples",
        f"dataset:{k}:cinnamon",
        "dataset:laurents-orchard:red.delicious",
        f"job:{k}:gather_apples",
        f"job:{k}:prepare_apple_filling",
        f"job:{k}:prepare_apple_pie",
    ]
    found = edges(graph)
    assert found[f"job:{k}:gather_apples"][1] == [
        (
            f"dataset:{k}:apples",
            ["dataset:backyard:crab.apples", "dataset:laurents-orchard:red.delicious"],
        )
    ]
    assert found[f"job:{k}:prepare_apple_filling"][1] == [
        (
            f"dataset:{k}:apple.filling",
            ["dataset:cupboard:sugar", f"dataset:{k}:apples", f"dataset:{k}:cinnamon"],
        )
    ]
    # Sugar also went into the cider, which is not upstream of the pie.
    assert found["dataset:cupboard:sugar"] == (
        [],
        [(f"job:{k}:prepare_apple_filling", [f"dataset:{k}:apple.filling"])],
    )
    runs = graph["graph"][7]["data"]["latestRun"]
    assert runs["id"].startswith("155dbf08")


def _chain(client: TestClient) -> None:
    """a -j1-> b -j2-> c -j3-> d, a reader-only job `audit` on c, and x declared upstream of a
    by a DatasetEvent (no job)."""
    post(
        client,
        run_event(("etl", "j1"), inputs=[ds("db", "a")], outputs=[ds("db", "b")]),
        run_event(("etl", "j2"), inputs=[ds("db", "b")], outputs=[ds("db", "c")]),
        run_event(("etl", "j3"), inputs=[ds("db", "c")], outputs=[ds("db", "d")]),
        run_event(("etl", "audit"), inputs=[ds("db", "c")]),
        dataset_event(
            "db",
            "a",
            lineage={
                "_producer": "test",
                "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/LineageDatasetFacet.json",
                "inputs": [{"type": "DATASET", "namespace": "db", "name": "x"}],
            },
        ),
    )


def test_depth_counts_jobs_and_readers_and_declared_flows_appear(client: TestClient) -> None:
    _chain(client)
    shallow = lineage(client, "dataset:db:b", depth=1)
    assert [n["id"] for n in shallow["graph"]] == [
        "dataset:db:a",
        "dataset:db:b",
        "dataset:db:c",
        "job:etl:j1",
        "job:etl:j2",
    ]
    everything = lineage(client, "dataset:db:b")
    assert [n["id"] for n in everything["graph"]] == [
        "dataset:db:a",
        "dataset:db:b",
        "dataset:db:c",
        "dataset:db:d",
        "dataset:db:x",
        "job:etl:audit",
        "job:etl:j1",
        "job:etl:j2",
        "job:etl:j3",
    ]
    found = edges(everything)
    assert found["dataset:db:x"] == ([], [("dataset:db:a", None)])
    assert found["job:etl:audit"] == ([("dataset:db:c", [])], [])
    assert lineage(client, "dataset:db:b", depth=0)["graph"][0]["id"] == "dataset:db:b"
    assert len(lineage(client, "dataset:db:b", depth=0)["graph"]) == 1


def test_job_to_job_edges(client: TestClient) -> None:
    """A lineage facet JOB entry: the own job `load` is fed by job `transform` directly."""
    post(
        client,
        run_event(("etl", "transform"), inputs=[ds("db", "raw")]),
        run_event(
            ("etl", "load"),
            outputs=[ds("db", "mart")],
            job_facets=lineage_facet(job_entry(inputs=[job_input("etl", "transform")])),
        ),
    )
    graph = lineage(client, "job:etl:load")
    assert edges(graph) == {
        "dataset:db:mart": ([("job:etl:load", [])], []),
        "dataset:db:raw": ([], [("job:etl:transform", [])]),
        "job:etl:load": ([("job:etl:transform", None)], [("dataset:db:mart", [])]),
        "job:etl:transform": ([("dataset:db:raw", [])], [("job:etl:load", None)]),
    }


def test_dataset_read_and_written_by_the_seed_job_is_walked_both_ways(client: TestClient) -> None:
    """`j` updates `d` in place; `w` wrote `d` before and `r` reads it after."""
    post(
        client,
        run_event(("etl", "w"), outputs=[ds("db", "d")]),
        run_event(("etl", "j"), inputs=[ds("db", "d")], outputs=[ds("db", "d")]),
        run_event(("etl", "r"), inputs=[ds("db", "d")], outputs=[ds("db", "e")]),
    )
    assert [n["id"] for n in lineage(client, "job:etl:j", depth=1)["graph"]] == [
        "dataset:db:d",
        "job:etl:j",
    ]
    graph = lineage(client, "job:etl:j", depth=2)
    assert edges(graph) == {
        "dataset:db:d": (
            [("job:etl:j", []), ("job:etl:w", [])],
            [("job:etl:j", []), ("job:etl:r", ["dataset:db:e"])],
        ),
        "dataset:db:e": ([("job:etl:r", ["dataset:db:d"])], []),
        "job:etl:j": ([("dataset:db:d", [])], [("dataset:db:d", [])]),
        "job:etl:r": ([("dataset:db:d", ["dataset:db:e"])], [("dataset:db:e", ["dataset:db:d"])]),
        "job:etl:w": ([], [("dataset:db:d", [])]),
    }


def test_graph_is_cut_at_the_node_cap(db_url: str) -> None:
    settings = Settings(db_url=db_url, max_lineage_nodes=3)
    with TestClient(create_app(settings, migrate=False)) as client:
        _chain(client)
        graph = lineage(client, "dataset:db:b")
        assert graph["truncated"] is True
        assert len(graph["graph"]) == 3


def test_depth_is_capped(db_url: str) -> None:
    with TestClient(create_app(Settings(db_url=db_url, max_levels=5), migrate=False)) as client:
        post(client, run_event(("etl", "j1"), inputs=[ds("db", "a")], outputs=[ds("db", "b")]))
        for path in ("/api/v1/lineage", "/api/v1/column-lineage"):
            response = client.get(path, params={"nodeId": "dataset:db:a", "depth": 6})
            assert response.status_code == 400
            assert response.json()["message"] == "depth: must be at most 5, not 6"
            assert client.get(path, params={"nodeId": "dataset:db:a", "depth": 5}).is_success
            assert (
                client.get(path, params={"nodeId": "dataset:db:a", "depth": -1}).status_code == 400
            )
        # Without a depth the default of 20 exceeds the cap too: the answer says so.
        assert client.get("/api/v1/lineage", params={"nodeId": "dataset:db:a"}).status_code == 400


def test_node_ids_resolve_namespaces_with_colons(client: TestClient) -> None:
    post(
        client,
        run_event(("etl", "load"), outputs=[ds(PG, "public.orders")]),
        # `x` with dataset `y:z`, and namespace `x:y` with dataset `z`: same id text.
        run_event(("etl", "odd"), outputs=[ds("x", "y:z"), ds("x:y", "w")]),
    )
    graph = lineage(client, f"dataset:{PG}:public.orders")
    assert [n["id"] for n in graph["graph"]] == [f"dataset:{PG}:public.orders", "job:etl:load"]
    assert graph["graph"][0]["data"]["namespace"] == PG
    # Only namespace `x` holds a dataset that fits `x:y:z`.
    graph = lineage(client, "dataset:x:y:z")
    assert graph["graph"][0]["data"]["id"] == {"namespace": "x", "name": "y:z"}
    assert lineage(client, "dataset:x:y:w")["graph"][0]["data"]["id"] == {
        "namespace": "x:y",
        "name": "w",
    }
    # The version suffix the marquez-python client may append is accepted...
    versioned = lineage(client, f"dataset:{PG}:public.orders#{uuid.uuid4()}")
    assert versioned["graph"][0]["id"] == f"dataset:{PG}:public.orders"
    # ...and a name that really ends in `#<uuid>` is still found.
    snapshot = f"orders#{uuid.uuid4()}"
    post(client, run_event(("etl", "snap"), outputs=[ds("db", snapshot)]))
    assert lineage(client, f"dataset:db:{snapshot}")["graph"][0]["data"]["name"] == snapshot


BAD_NODE_IDS = [
    (
        "table:db:a",
        400,
        "nodeId: 'table:db:a' must start with 'dataset:', 'datasetField:' or 'job:'",
    ),
    ("dataset:db", 400, "nodeId: 'dataset:db' must have the form dataset:<namespace>:<name>"),
    ("", 400, "nodeId: must not be empty"),
    (
        "datasetField:db:a:id",
        400,
        "nodeId: lineage takes a dataset or job node id; use /column-lineage",
    ),
    ("dataset:nowhere:a", 404, "nodeId: no dataset or job matches 'dataset:nowhere:a'"),
    ("dataset:db:missing", 404, "nodeId: no dataset or job matches 'dataset:db:missing'"),
    ("job:db:a", 404, "nodeId: no dataset or job matches 'job:db:a'"),
]


def test_bad_node_ids(client: TestClient) -> None:
    post(
        client,
        run_event(("etl", "j1"), outputs=[ds("db", "a", schema=schema_facet(("id", "int")))]),
    )
    for node_id, status, message in BAD_NODE_IDS:
        response = client.get("/api/v1/lineage", params={"nodeId": node_id})
        body = response.json()
        assert (body["code"], body["message"]) == (status, message), node_id
        if status == 400:
            assert body["errors"] == [{"path": "nodeId", "message": message[8:]}], node_id
        assert response.status_code == status


def test_missing_node_id_is_400(client: TestClient) -> None:
    response = client.get("/api/v1/lineage")
    assert response.status_code == 400
    assert "nodeId" in response.json()["message"]


def test_path_segments_are_decoded_exactly_once(client: TestClient) -> None:
    post(
        client,
        run_event(("s3://jobs", "load/daily"), outputs=[ds("s3://bucket", "raw/events")]),
        run_event(("etl", "pct"), outputs=[ds("db", "a%2Fb")]),
    )
    got = client.get("/api/v1/namespaces/s3%3A%2F%2Fbucket/datasets/raw%2Fevents")
    assert got.status_code == 200, got.text
    assert got.json()["id"] == {"namespace": "s3://bucket", "name": "raw/events"}
    job = client.get("/api/v1/namespaces/s3%3A%2F%2Fjobs/jobs/load%2Fdaily")
    assert job.json()["name"] == "load/daily"
    # `a%2Fb` itself travels as `a%252Fb`; decoding twice would look for `a/b`.
    assert client.get("/api/v1/namespaces/db/datasets/a%252Fb").json()["name"] == "a%2Fb"
    assert client.get("/api/v1/namespaces/db/datasets/a%2Fb").status_code == 404
    assert client.get("/api/v1/namespaces/s3%3A%2F%2Fbucket").json()["name"] == "s3://bucket"


def test_unknown_entities_are_404_with_a_message(client: TestClient) -> None:
    post(client, run_event(("etl", "j1"), outputs=[ds("db", "a")]))
    missing = {
        "/api/v1/namespaces/nowhere": "namespace 'nowhere' not found",
        "/api/v1/namespaces/nowhere/datasets": "namespace 'nowhere' not found",
        "/api/v1/namespaces/db/datasets/zzz": "dataset 'zzz' not found in namespace 'db'",
        "/api/v1/namespaces/db/datasets/zzz/versions": "dataset 'zzz' not found in namespace 'db'",
        "/api/v1/namespaces/etl/jobs/zzz": "job 'zzz' not found in namespace 'etl'",
        "/api/v1/namespaces/etl/jobs/zzz/runs": "job 'zzz' not found in namespace 'etl'",
        "/api/v1/sources/zzz": "source 'zzz' not found",
    }
    for path, message in missing.items():
        response = client.get(path)
        assert (response.status_code, response.json()["message"]) == (404, message), path
    run_id = uuid.uuid4()
    response = client.get(f"/api/v1/jobs/runs/{run_id}")
    assert (response.status_code, response.json()["message"]) == (404, f"run {run_id} not found")
    assert client.get("/api/v1/jobs/runs/not-a-uuid").status_code == 400


def test_pagination(client: TestClient) -> None:
    post(client, *(run_event(("etl", f"j{i}"), outputs=[ds("db", f"t{i}")]) for i in range(5)))
    page = client.get("/api/v1/namespaces/db/datasets", params={"limit": 2, "offset": 1}).json()
    assert [d["name"] for d in page["datasets"]] == ["t1", "t2"]
    assert page["totalCount"] == 5
    jobs = client.get("/api/v1/namespaces/etl/jobs", params={"limit": 3, "offset": 3}).json()
    assert ([j["name"] for j in jobs["jobs"]], jobs["totalCount"]) == (["j3", "j4"], 5)
    assert client.get("/api/v1/namespaces", params={"offset": 9}).json() == {
        "namespaces": [],
        "totalCount": 2,
    }
    for params in ({"limit": 0}, {"offset": -1}, {"limit": "many"}):
        response = client.get("/api/v1/namespaces/db/datasets", params=params)
        assert response.status_code == 400, params
        assert next(iter(params)) in response.json()["message"]


def test_sources_and_job_versions(client: TestClient) -> None:
    source = {
        "_producer": "t",
        "_schemaURL": "t",
        "name": "warehouse",
        "uri": "postgres://h:5432/db",
    }
    job = ("etl", "loader")
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    post(
        client,
        run_event(job, run_id=first, time=BASE_TIME, outputs=[ds("db", "a", dataSource=source)]),
        run_event(job, run_id=second, time=BASE_TIME + hours(1), outputs=[ds("db", "b")]),
    )
    sources = client.get("/api/v1/sources").json()
    assert [(s["name"], s["type"], s["connectionUrl"]) for s in sources["sources"]] == [
        ("db", "DEFAULT", "db"),
        ("warehouse", "POSTGRES", "postgres://h:5432/db"),
    ]
    assert client.get("/api/v1/sources/warehouse").json()["name"] == "warehouse"

    versions = client.get("/api/v1/namespaces/etl/jobs/loader/versions").json()
    assert versions["totalCount"] == 2
    assert [(v["outputs"], v["latestRun"]["id"]) for v in versions["versions"]] == [
        ([{"namespace": "db", "name": "b"}], second),
        ([{"namespace": "db", "name": "a"}], first),
    ]
    newest = versions["versions"][0]
    run = client.get(f"/api/v1/jobs/runs/{second}").json()
    assert run["jobVersion"]["version"] == newest["version"]
    one = client.get(f"/api/v1/namespaces/etl/jobs/loader/versions/{newest['version']}")
    assert one.json() == newest
    facets = client.get(f"/api/v1/jobs/runs/{second}/facets", params={"type": "job"}).json()
    assert facets == {"runId": second, "facets": {}}


def _column_events(client: TestClient) -> None:
    """raw(id, payload) -> clean: id <- raw.id, extra <- raw.payload (`extra` not in schema);
    clean.extra -> report.total; raw.payload -> side.copy (a sibling of clean.extra)."""
    post(
        client,
        run_event(
            ("etl", "clean"),
            inputs=[ds("db", "raw", schema=schema_facet(("id", "int"), ("payload", "text")))],
            outputs=[
                ds(
                    "db",
                    "clean",
                    schema=schema_facet(("id", "int")),
                    columnLineage=column_lineage(
                        {"id": [("db", "raw", "id")], "extra": [("db", "raw", "payload")]}
                    ),
                )
            ],
        ),
        run_event(
            ("etl", "side"),
            inputs=[ds("db", "raw")],
            outputs=[
                ds("db", "side", columnLineage=column_lineage({"copy": [("db", "raw", "payload")]}))
            ],
        ),
        run_event(
            ("etl", "report"),
            inputs=[ds("db", "clean")],
            outputs=[
                ds(
                    "db",
                    "report",
                    columnLineage=column_lineage({"total": [("db", "clean", "extra")]}),
                )
            ],
        ),
    )


def columns(client: TestClient, node_id: str, **params: Any) -> list[str]:
    response = client.get("/api/v1/column-lineage", params={"nodeId": node_id, **params})
    assert response.status_code == 200, response.text
    return [n["id"] for n in response.json()["graph"]]


def test_column_lineage_keeps_fields_missing_from_the_schema(client: TestClient) -> None:
    _column_events(client)
    f = "datasetField:db:"
    assert columns(client, f + "clean:extra") == [f + "clean:extra", f + "raw:payload"]
    for flag in ("True", "true"):
        assert columns(client, f + "clean:extra", withDownstream=flag) == [
            f + "clean:extra",
            f + "raw:payload",
            f + "report:total",
        ]
    for flag in ("False", "false"):
        assert columns(client, f + "clean:extra", withDownstream=flag) == [
            f + "clean:extra",
            f + "raw:payload",
        ]
    assert columns(client, "dataset:db:clean") == [
        f + "clean:extra",
        f + "clean:id",
        f + "raw:id",
        f + "raw:payload",
    ]
    assert columns(client, "job:etl:report") == [
        f + "clean:extra",
        f + "raw:payload",
        f + "report:total",
    ]
    assert columns(client, f + "report:total", depth=1) == [f + "clean:extra", f + "report:total"]
    bad = client.get(
        "/api/v1/column-lineage", params={"nodeId": f + "clean:extra", "withDownstream": "maybe"}
    )
    assert bad.status_code == 400
    missing = client.get("/api/v1/column-lineage", params={"nodeId": f + "clean:nope"})
    assert missing.status_code == 404
    assert (
        missing.json()["message"] == "nodeId: dataset 'clean' in namespace 'db' has no field 'nope'"
    )


def test_search_matches_percent_and_underscore_literally(client: TestClient) -> None:
    post(
        client,
        run_event(
            ("etl", "Sales_Loader"), time=BASE_TIME + hours(2), outputs=[ds("db", "sales_2024")]
        ),
        run_event(
            ("etl", "other"),
            time=BASE_TIME,
            outputs=[ds("db", "sales-2024"), ds("db", "100%_done")],
        ),
    )
    found = client.get("/api/v1/search", params={"q": "_2024"}).json()
    assert found == {
        "totalCount": 1,
        "results": [
            {
                "type": "DATASET",
                "name": "sales_2024",
                "updatedAt": found["results"][0]["updatedAt"],
                "namespace": "db",
                "nodeId": "dataset:db:sales_2024",
            }
        ],
    }
    assert [
        r["name"] for r in client.get("/api/v1/search", params={"q": "%"}).json()["results"]
    ] == ["100%_done"]
    sales = client.get("/api/v1/search", params={"q": "SALES"}).json()
    assert [(r["type"], r["name"]) for r in sales["results"]] == [
        ("JOB", "Sales_Loader"),
        ("DATASET", "sales-2024"),
        ("DATASET", "sales_2024"),
    ]
    only_jobs = client.get("/api/v1/search", params={"q": "sales", "filter": "job"}).json()
    assert [r["nodeId"] for r in only_jobs["results"]] == ["job:etl:Sales_Loader"]
    limited = client.get("/api/v1/search", params={"q": "sales", "limit": 1}).json()
    assert (limited["totalCount"], len(limited["results"])) == (3, 1)
    for params in ({"q": ""}, {"q": "a", "filter": "table"}, {"q": "a", "sort": "size"}, {}):
        assert client.get("/api/v1/search", params=params).status_code == 400, params


def test_lineage_events(client: TestClient) -> None:
    times = [BASE_TIME + hours(i) for i in range(3)]
    runs = [str(uuid.uuid4()) for _ in times]
    post(
        client,
        *(run_event(("etl", "j"), run_id=r, time=t) for r, t in zip(runs, times, strict=True)),
    )

    def run_ids(**params: Any) -> tuple[list[str], int]:
        body = client.get("/api/v1/events/lineage", params=params).json()
        return [e["run"]["runId"] for e in body["events"]], body["totalCount"]

    assert run_ids() == ([runs[2], runs[1], runs[0]], 3)
    assert run_ids(sortDirection="asc") == (runs, 3)
    assert run_ids(sortDirection="asc", limit=1, offset=1) == ([runs[1]], 3)
    assert run_ids(after="2026-11-01T13:00:00Z") == ([runs[2], runs[1]], 2)
    assert run_ids(before="2026-11-01T13:00:00Z", after="2026-11-01T12:00:00Z") == ([runs[0]], 1)
    # Offsets are honoured; a time without one is UTC.
    assert run_ids(before="2026-11-01T15:00:00+02:00") == ([runs[0]], 1)
    assert run_ids(after="2026-11-01T14:00:00") == ([runs[2]], 1)
    event = client.get("/api/v1/events/lineage", params={"limit": 1}).json()["events"][0]
    assert event["job"] == {"namespace": "etl", "name": "j", "facets": {}}
    assert client.get("/api/v1/events/lineage", params={"sortDirection": "up"}).status_code == 400
    assert client.get("/api/v1/events/lineage", params={"before": "yesterday"}).status_code == 400
