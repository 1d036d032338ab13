"""The real marquez-python client against a live `upstream serve` (design §4.4).

One server per database for the whole module: Marquez's food-delivery demo (26 events) plus a
few events with a URI namespace (`s3://bucket`) and names holding `/`, which the client sends
percent-encoded inside one path segment. Every expected value is worked out from those events.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from marquez_client import MarquezClient
from marquez_client.errors import APIError
from marquez_client.models import DatasetType, JobType

from tests.builders import BASE_TIME, column_lineage, ds, hours, run_event, schema_facet
from tests.conftest import FIXTURES, PG_ADMIN_URL, LiveServer
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

S3 = "s3://bucket"
RUN_A = "0b6f2a64-0000-4000-8000-00000000000a"
RUN_B = "0b6f2a64-0000-4000-8000-00000000000b"
RUN_C = "0b6f2a64-0000-4000-8000-00000000000c"
INGEST = ("scheduler", "ingest")
TRANSFORM = ("scheduler", "transform")


def _events() -> list[dict[str, Any]]:
    raw = ds(S3, "raw/events", schema=schema_facet(("id", "int"), ("payload", "string")))
    clean = ds(
        S3,
        "clean/events",
        schema=schema_facet(("id", "int")),
        # `extra` is not in the schema facet; its lineage must still be answered.
        columnLineage=column_lineage(
            {"id": [(S3, "raw/events", "id")], "extra": [(S3, "raw/events", "payload")]}
        ),
    )
    return [
        run_event(INGEST, run_id=RUN_A, event_type="START", time=BASE_TIME, outputs=[raw]),
        run_event(INGEST, run_id=RUN_A, time=BASE_TIME + hours(1), outputs=[ds(S3, "raw/events")]),
        run_event(
            INGEST, run_id=RUN_B, event_type="START", time=BASE_TIME + hours(2), outputs=[raw]
        ),
        run_event(INGEST, run_id=RUN_B, event_type="FAIL", time=BASE_TIME + hours(2.5)),
        run_event(
            TRANSFORM,
            run_id=RUN_C,
            time=BASE_TIME + hours(3),
            inputs=[ds(S3, "raw/events")],
            outputs=[clean],
        ),
    ]


def _own_postgres_database(name: str) -> tuple[str, sa.Engine]:
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        admin.dispose()
        pytest.skip(f"PostgreSQL is not reachable: {str(exc).splitlines()[0]}")
    url = sa.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    store = Store(url)
    upgrade(store)
    store.dispose()
    return url, admin


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def marquez(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    sqlite_template: Path,
) -> Iterator[MarquezClient]:
    """A live server on its own database holding the module's events, and a client for it."""
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared OpenLineage fixtures are not at {FIXTURES}")
    workdir = tmp_path_factory.mktemp("marquez")
    admin: sa.Engine | None = None
    name = f"upstream_marquez_{uuid.uuid4().hex[:12]}"
    if request.param == "sqlite":
        shutil.copy(sqlite_template, workdir / "upstream.db")
        url = f"sqlite:///{workdir / 'upstream.db'}"
    else:
        url, admin = _own_postgres_database(name)
    server = LiveServer(url, workdir).start()
    try:
        demo = json.loads((FIXTURES / "marquez/food-delivery/metadata.json").read_text())
        for body in (demo, _events()):
            response = httpx.post(f"{server.url}/api/v1/lineage", json=body, timeout=30)
            assert response.status_code == 201, response.text
        yield MarquezClient(server.url)
    finally:
        server.stop()
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def test_namespaces(marquez: MarquezClient) -> None:
    listed = marquez.list_namespaces()
    assert [n["name"] for n in listed["namespaces"]] == ["food_delivery", S3, "scheduler"]
    assert listed["totalCount"] == 3
    assert [n["name"] for n in marquez.list_namespaces(limit=1, offset=1)["namespaces"]] == [S3]
    namespace = marquez.get_namespace(S3)
    assert (namespace["name"], namespace["ownerName"], namespace["description"]) == (
        S3,
        "anonymous",
        None,
    )


def test_datasets(marquez: MarquezClient) -> None:
    first = marquez.list_datasets("food_delivery", limit=3)
    assert [d["name"] for d in first["datasets"]] == [
        "public.categories",
        "public.customers",
        "public.delivery_7_days",
    ]
    # 13 tables, plus `public.menu_item_id`, which the demo's columnLineage names as a source,
    # and the 8 staging tables (`tmp_orders`…) its jobs' SQL reads without listing them.
    assert first["totalCount"] == 22
    listed = marquez.list_datasets(S3)
    assert [d["id"] for d in listed["datasets"]] == [
        {"namespace": S3, "name": "clean/events"},
        {"namespace": S3, "name": "raw/events"},
    ]

    raw = marquez.get_dataset(S3, "raw/events")
    assert raw["id"] == {"namespace": S3, "name": "raw/events"}
    assert (raw["type"], raw["physicalName"], raw["sourceName"]) == ("DB_TABLE", "raw/events", S3)
    assert raw["fields"] == [
        {"name": "id", "type": "int", "tags": [], "description": None},
        {"name": "payload", "type": "string", "tags": [], "description": None},
    ]
    # Run A completed; run B, which wrote the newest version, failed.
    assert raw["lastModifiedAt"] == "2026-11-01T13:00:00Z"

    demo = marquez.get_dataset("food_delivery", "public.top_delivery_times")
    assert demo["sourceName"] == "food_delivery_db"
    assert demo["description"] == "A table for top delivery times."
    assert [f["name"] for f in demo["fields"]][:3] == [
        "order_id",
        "order_placed_on",
        "order_delivered_on",
    ]


def test_dataset_versions(marquez: MarquezClient) -> None:
    versions = marquez.list_dataset_versions(S3, "raw/events")
    assert versions["totalCount"] == 2
    assert [v["createdByRun"]["id"] for v in versions["versions"]] == [RUN_B, RUN_A]
    assert [v["createdByRun"]["state"] for v in versions["versions"]] == ["FAILED", "COMPLETED"]
    assert [v["createdAt"] for v in versions["versions"]] == [
        "2026-11-01T14:00:00Z",
        "2026-11-01T12:00:00Z",
    ]
    newest = versions["versions"][0]
    assert newest["id"] == {"namespace": S3, "name": "raw/events", "version": newest["version"]}
    assert marquez.get_dataset(S3, "raw/events")["currentVersion"] == newest["version"]
    assert marquez.get_dataset_version(S3, "raw/events", newest["version"]) == newest
    page = marquez.list_dataset_versions(S3, "raw/events", limit=1, offset=1)
    assert [v["createdByRun"]["id"] for v in page["versions"]] == [RUN_A]


def test_jobs(marquez: MarquezClient) -> None:
    listed = marquez.list_jobs("scheduler")
    assert [j["name"] for j in listed["jobs"]] == ["ingest", "transform"]
    assert listed["totalCount"] == 2

    ingest = marquez.get_job(*INGEST)
    assert ingest["id"] == {"namespace": "scheduler", "name": "ingest"}
    assert (ingest["inputs"], ingest["outputs"]) == ([], [{"namespace": S3, "name": "raw/events"}])
    assert ingest["latestRun"]["id"] == RUN_B
    assert ingest["latestRun"]["state"] == "FAILED"
    assert [r["id"] for r in ingest["latestRuns"]] == [RUN_B, RUN_A]

    demo = marquez.get_job("food_delivery", "delivery_times_7_days")
    assert demo["inputs"] == [{"namespace": "food_delivery", "name": "public.delivery_7_days"}]
    assert demo["outputs"] == [
        {"namespace": "food_delivery", "name": "public.discounts"},
        {"namespace": "food_delivery", "name": "public.top_delivery_times"},
    ]
    assert demo["description"] == "Determine weekly top delivery times by restaurant."
    assert demo["type"] == "BATCH"
    assert demo["latestRun"]["state"] == "COMPLETED"
    assert demo["latestRun"]["durationMs"] == 6 * 60 * 1000


def test_job_runs(marquez: MarquezClient) -> None:
    runs = marquez.list_job_runs(*INGEST)
    assert [r["id"] for r in runs["runs"]] == [RUN_B, RUN_A]
    assert runs["totalCount"] == 2
    assert [r["id"] for r in marquez.list_job_runs(*INGEST, limit=1, offset=1)["runs"]] == [RUN_A]
    first = runs["runs"][1]
    assert (first["state"], first["startedAt"], first["endedAt"], first["durationMs"]) == (
        "COMPLETED",
        "2026-11-01T12:00:00Z",
        "2026-11-01T13:00:00Z",
        3_600_000,
    )

    run = marquez.get_job_run(RUN_C)
    assert run["id"] == RUN_C
    assert run["state"] == "COMPLETED"
    assert run["jobVersion"]["namespace"] == "scheduler"
    assert run["jobVersion"]["name"] == "transform"
    raw_versions = marquez.list_dataset_versions(S3, "raw/events")["versions"]
    # Run C read raw/events after run B wrote its version (at 14:00, before 15:00).
    assert [v["datasetVersionId"] for v in run["inputDatasetVersions"]] == [
        {"namespace": S3, "name": "raw/events", "version": raw_versions[0]["version"]}
    ]
    clean = marquez.list_dataset_versions(S3, "clean/events")["versions"]
    assert [v["datasetVersionId"] for v in run["outputDatasetVersions"]] == [
        {"namespace": S3, "name": "clean/events", "version": clean[0]["version"]}
    ]


def _ids(graph: dict[str, Any]) -> list[str]:
    return [node["id"] for node in graph["graph"]]


def test_column_lineage(marquez: MarquezClient) -> None:
    field = "datasetField:food_delivery:"
    upstream = marquez.get_column_lineage_by_dataset_field(
        "food_delivery", "public.top_delivery_times", "order_delivery_time"
    )
    assert _ids(upstream) == [
        field + "public.delivery_7_days:order_delivered_on",
        field + "public.delivery_7_days:order_placed_on",
        field + "public.order_status:transitioned_at",
        field + "public.orders:placed_on",
        field + "public.orders_7_days:placed_on",
        field + "public.top_delivery_times:order_delivery_time",
        # etl_order_status and etl_orders load these from staging tables, says their SQL.
        field + "tmp_order_status:transitioned_at",
        field + "tmp_orders:placed_on",
    ]
    [seed] = [n for n in upstream["graph"] if n["id"].startswith(field + "public.top_delivery")]
    assert seed["type"] == "DATASET_FIELD"
    assert seed["data"]["fieldType"] == "TIMESTAMP"
    assert [(i["dataset"], i["field"]) for i in seed["data"]["inputFields"]] == [
        ("public.delivery_7_days", "order_delivered_on"),
        ("public.delivery_7_days", "order_placed_on"),
    ]
    # Marquez's orientation: an in-edge goes from the node to its input.
    assert seed["inEdges"] == [
        {"origin": seed["id"], "destination": field + "public.delivery_7_days:order_delivered_on"},
        {"origin": seed["id"], "destination": field + "public.delivery_7_days:order_placed_on"},
    ]

    shallow = marquez.get_column_lineage_by_dataset_field(
        "food_delivery", "public.delivery_7_days", "order_placed_on", depth=1, with_downstream=True
    )
    assert _ids(shallow) == [
        field + "public.delivery_7_days:order_placed_on",
        field + "public.discounts:amount_off",
        field + "public.orders_7_days:placed_on",
        field + "public.top_delivery_times:order_delivery_time",
        field + "public.top_delivery_times:order_placed_on",
    ]

    missing_from_schema = marquez.get_column_lineage_by_dataset_field(S3, "clean/events", "extra")
    assert _ids(missing_from_schema) == [
        f"datasetField:{S3}:clean/events:extra",
        f"datasetField:{S3}:raw/events:payload",
    ]
    assert missing_from_schema["graph"][0]["data"]["fieldType"] is None


def test_unknown_entities_are_errors(marquez: MarquezClient) -> None:
    with pytest.raises(APIError):
        marquez.get_dataset(S3, "no/such/dataset")
    with pytest.raises(APIError):
        marquez.get_namespace("nowhere")
    with pytest.raises(APIError):
        marquez.get_job_run(str(uuid.uuid4()))


def _event_names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["job"]["name"], e["eventType"]) for e in events]


def test_list_events_newest_first_and_by_namespace(marquez: MarquezClient) -> None:
    everything = marquez.list_events()["events"]
    assert len(everything) == 26 + 5  # the food-delivery demo and the module's own events
    times = [e["eventTime"] for e in everything]
    assert times == sorted(times, reverse=True)
    # The module's events have job namespace "scheduler"; the FAIL event names no dataset.
    assert _event_names(marquez.list_events("scheduler")["events"]) == [
        ("transform", "COMPLETE"),
        ("ingest", "FAIL"),
        ("ingest", "START"),
        ("ingest", "COMPLETE"),
        ("ingest", "START"),
    ]
    # By dataset namespace; the client puts `s3://bucket` into the path unencoded.
    assert _event_names(marquez.list_events(S3)["events"]) == [
        ("transform", "COMPLETE"),
        ("ingest", "START"),
        ("ingest", "COMPLETE"),
        ("ingest", "START"),
    ]
    page = marquez.list_events("scheduler", limit=2, offset=1)["events"]
    assert _event_names(page) == [("ingest", "FAIL"), ("ingest", "START")]
    assert marquez.list_events("nowhere")["events"] == []


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "migrating-from-marquez.md"
#: Arguments for each call the guide says is not served.
UNSERVED_CALLS: dict[str, tuple[Any, ...]] = {
    "create_namespace": ("scheduler", "owner"),
    "create_source": ("crm", "POSTGRESQL", "jdbc:postgresql://db:5432/crm"),
    "create_dataset": ("scheduler", "t", DatasetType.DB_TABLE, "t", "crm"),
    "create_job": ("scheduler", "new", JobType.BATCH),
    "create_job_run": ("scheduler", "ingest"),
    "mark_job_run_as_started": (RUN_A,),
    "mark_job_run_as_completed": (RUN_A,),
    "mark_job_run_as_failed": (RUN_A,),
    "mark_job_run_as_aborted": (RUN_A,),
}


def _guide_calls() -> dict[str, int | None]:
    """Each call the guide's table lists: None when served, else the status it says."""
    calls: dict[str, int | None] = {}
    for row in GUIDE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `(\w+)\(", row)
        if not found:
            continue
        cells = row.split(" | ")
        refused = re.match(r"no \((\d{3})\)", cells[-1])
        names = [found.group(1)]
        prefix = found.group(1).rsplit("_", 1)[0]
        names += [prefix + also for also in re.findall(r"`(_\w+)`", cells[0])]
        for name in names:
            calls[name] = int(refused.group(1)) if refused else None
    return calls


def test_the_guide_lists_every_client_call_and_what_it_gets(marquez: MarquezClient) -> None:
    public = {
        name
        for name, _ in inspect.getmembers(MarquezClient, inspect.isfunction)
        if not name.startswith("_")
    }
    calls = _guide_calls()
    assert set(calls) == public
    assert {name for name, status in calls.items() if status} == set(UNSERVED_CALLS)
    for name, arguments in UNSERVED_CALLS.items():
        with pytest.raises(APIError) as refused:
            getattr(marquez, name)(*arguments)
        assert refused.value.__cause__.response.status_code == calls[name], name
