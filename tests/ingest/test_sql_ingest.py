"""The `sql` job facet through ingestion (design §3.3), on both databases: SQL edges are
stored with their origin, shown by the field answers, ranked below columnLineage in either
order of arrival, never an error, and off when the setting says so."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_metrics import scrape, value
from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    hours,
    job_event,
    lineage_facet,
    run_event,
    schema_facet,
)
from tests.ingest.test_ingest_semantics import post
from tests.readback import dataset_flows, edge_rows, edges
from upstream.api.app import create_app
from upstream.ingest.rebuild import rebuild
from upstream.settings import Settings
from upstream.store.engine import Store

PG = "postgres://db:5432"
JOB = ("etl", "load_daily")
LOAD = """
INSERT INTO public.daily (customer_id, total)
SELECT o.customer_id, sum(o.amount) FROM public.orders o
JOIN public.customers c ON c.id = o.customer_id
WHERE o.status = 'paid'
GROUP BY o.customer_id;
SELECT count(*) FROM public.audit
"""


def sql_facet(query: str, dialect: str | None = "postgres") -> dict[str, Any]:
    facet: dict[str, Any] = {
        "_producer": "https://example.com/producer",
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
        "query": query,
    }
    if dialect is not None:
        facet["dialect"] = dialect
    return {"sql": facet}


def load_event(*, run_id: str | None = None, query: str = LOAD, **changes: Any) -> dict[str, Any]:
    return run_event(
        JOB,
        run_id=run_id,
        inputs=[ds(PG, "public.orders"), ds(PG, "public.customers"), ds(PG, "public.audit")],
        outputs=[ds(PG, "public.daily")],
        job_facets=sql_facet(query),
        **changes,
    )


def d(name: str, field: str | None = None) -> str:
    return f"{PG}/{name}" if field is None else f"{PG}/{name}#{field}"


LOAD_EDGES = {
    (d("public.orders", "customer_id"), d("public.daily", "customer_id")),
    (d("public.orders", "amount"), d("public.daily", "total")),
    (d("public.orders", "customer_id"), d("public.daily")),  # JOIN and GROUP BY
    (d("public.customers", "id"), d("public.daily")),  # JOIN
    (d("public.orders", "status"), d("public.daily")),  # FILTER
}


def test_sql_edges_are_stored_with_their_origin_and_replace_the_product(
    client: TestClient, store: Store
) -> None:
    post(client, load_event())
    assert edges(store) == LOAD_EDGES
    rows = edge_rows(store)
    assert {r["origin"] for r in rows} == {"sql"}
    total = next(r for r in rows if r["target_field"] == "total")
    assert total["transformations"] == [{"type": "DIRECT", "subtype": "AGGREGATION"}]
    # public.audit is read (a SELECT count(*)), but feeds nothing: no flow from it.
    assert dataset_flows(store) == {
        (d("public.orders"), d("public.daily")),
        (d("public.customers"), d("public.daily")),
    }


def test_field_answers_show_sql_edges_marked_sql(client: TestClient) -> None:
    post(client, load_event())
    summary = client.get(
        f"/v3/namespaces/{PG.replace('/', '%2F')}/datasets/public.daily/lineage/fields/total",
        params={"direction": "incoming", "start": "0"},
    ).json()
    assert summary == {
        "incoming": [
            {
                "dataset": {"namespace": PG, "name": "public.orders"},
                "fields": ["amount"],
                "origins": {"amount": ["sql"]},
            }
        ]
    }
    graph = client.get(
        "/api/v1/column-lineage", params={"nodeId": f"datasetField:{PG}:public.daily:total"}
    ).json()["graph"]
    [seed] = [n for n in graph if n["id"] == f"datasetField:{PG}:public.daily:total"]
    [source] = seed["data"]["inputFields"]
    assert (source["dataset"], source["field"], source["origins"]) == (
        "public.orders",
        "amount",
        ["sql"],
    )
    assert source["transformations"] == [{"type": "DIRECT", "subtype": "AGGREGATION"}]


@pytest.mark.parametrize("column_lineage_first", [False, True])
def test_column_lineage_of_the_same_run_wins_in_either_order(
    client: TestClient, store: Store, column_lineage_first: bool
) -> None:
    run_id = str(uuid.uuid4())
    with_sql = load_event(run_id=run_id, event_type="START")
    with_columns = load_event(run_id=run_id, time=BASE_TIME + hours(1))
    with_columns["outputs"] = [
        ds(
            PG,
            "public.daily",
            columnLineage=column_lineage({"total": [(PG, "public.orders", "amount")]}),
        )
    ]
    post(client, *((with_columns, with_sql) if column_lineage_first else (with_sql, with_columns)))
    assert edges(store) == {(d("public.orders", "amount"), d("public.daily", "total"))}
    assert {r["origin"] for r in edge_rows(store)} == {"column_lineage"}


def test_another_runs_sql_is_kept_beside_this_runs_column_lineage(
    client: TestClient, store: Store
) -> None:
    later = load_event(time=BASE_TIME + hours(1))
    later["outputs"] = [
        ds(PG, "public.daily", columnLineage=column_lineage({"total": [(PG, "x", "amount")]}))
    ]
    post(client, load_event(), later)
    # Precedence is per run and output: the first run's SQL lineage stands.
    assert {r["origin"] for r in edge_rows(store)} == {"sql", "column_lineage"}


@pytest.mark.parametrize("in_one_batch", [False, True])
def test_names_resolve_against_the_inputs_an_earlier_event_of_the_run_listed(
    client: TestClient, store: Store, in_one_batch: bool
) -> None:
    """START lists the input (in another namespace), COMPLETE the output and the SQL."""
    run_id = str(uuid.uuid4())
    start = run_event(
        JOB, run_id=run_id, event_type="START", inputs=[ds("s3://landing", "raw/orders/")]
    )
    complete = run_event(
        JOB,
        run_id=run_id,
        time=BASE_TIME + hours(1),
        outputs=[ds(PG, "public.orders")],
        job_facets=sql_facet('INSERT INTO public.orders (id) SELECT id FROM "raw/orders/"'),
    )
    if in_one_batch:
        response = client.post("/api/v1/lineage", json=[start, complete])
        assert response.status_code == 201, response.text
    else:
        post(client, start, complete)
    assert edges(store) == {("s3://landing/raw/orders/#id", d("public.orders", "id"))}


def test_a_rebuild_derives_the_same_sql_lineage(client: TestClient, store: Store) -> None:
    run_id = str(uuid.uuid4())
    start = run_event(
        JOB, run_id=run_id, event_type="START", inputs=[ds("s3://landing", "raw/orders/")]
    )
    complete = run_event(
        JOB,
        run_id=run_id,
        time=BASE_TIME + hours(1),
        outputs=[ds(PG, "public.orders")],
        job_facets=sql_facet('INSERT INTO public.orders (id) SELECT id FROM "raw/orders/"'),
    )
    post(client, start, complete, load_event())
    before = (edges(store), dataset_flows(store))
    assert rebuild(store).events == 3
    assert (edges(store), dataset_flows(store)) == before
    assert ("s3://landing/raw/orders/#id", d("public.orders", "id")) in before[0]


def test_a_lineage_facet_entry_leaves_no_room_for_sql(client: TestClient, store: Store) -> None:
    event = load_event()
    event["job"]["facets"].update(
        lineage_facet(
            dataset_entry(
                PG, "public.daily", fields={"total": [dataset_input(PG, "public.orders", "x")]}
            )
        )
    )
    post(client, event)
    assert edges(store) == {(d("public.orders", "x"), d("public.daily", "total"))}


def test_a_job_event_declares_sql_lineage(client: TestClient, store: Store) -> None:
    event = job_event(
        JOB,
        inputs=[ds(PG, "public.orders")],
        outputs=[ds(PG, "public.daily")],
        job_facets=sql_facet("INSERT INTO public.daily (id) SELECT id FROM public.orders"),
    )
    post(client, event)
    [row] = [r for r in edge_rows(store) if not r["implied"]]
    assert (row["scope"], row["origin"], row["target_field"]) == ("job", "sql", "id")


def test_select_star_uses_the_inputs_schema(client: TestClient, store: Store) -> None:
    event = run_event(
        JOB,
        inputs=[ds(PG, "public.orders", schema=schema_facet(("id", "int"), ("amount", "int")))],
        outputs=[ds(PG, "public.copy")],
        job_facets=sql_facet("CREATE TABLE public.copy AS SELECT * FROM public.orders"),
    )
    post(client, event)
    assert edges(store) == {
        (d("public.orders", "id"), d("public.copy", "id")),
        (d("public.orders", "amount"), d("public.copy", "amount")),
    }


def test_a_statement_that_does_not_parse_is_counted_and_logged_never_refused(
    client: TestClient, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = str(uuid.uuid4())
    broken = load_event(run_id=run_id, query="INSERT INTO public.daily SELECT FROM WHERE")
    with caplog.at_level(logging.WARNING, logger="upstream.ingest"):
        post(client, broken)
    # Lineage is as if there were no sql facet: inputs x outputs.
    assert edges(store) == set()
    assert dataset_flows(store) == {
        (d("public.orders"), d("public.daily")),
        (d("public.customers"), d("public.daily")),
        (d("public.audit"), d("public.daily")),
    }
    samples = scrape(client)
    assert value(samples, "upstream_sql_statements_total", result="unparsed") == 1
    assert value(samples, "upstream_sql_statements_total", result="parsed") == 0
    [record] = [r for r in caplog.records if "sql facet" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert run_id in record.getMessage()
    assert getattr(record, "run_id", None) == run_id


def test_parsed_statements_are_counted(client: TestClient) -> None:
    post(client, load_event())
    samples = scrape(client)
    assert value(samples, "upstream_sql_statements_total", result="parsed") == 2
    assert value(samples, "upstream_sql_statements_total", result="unparsed") == 0


@pytest.fixture
def client_without_sql(db_url: str) -> Iterator[TestClient]:
    app = create_app(Settings(db_url=db_url, sql_lineage=False), migrate=False)
    with TestClient(app) as test_client:
        yield test_client


def test_the_setting_turns_sql_lineage_off(client_without_sql: TestClient, store: Store) -> None:
    post(client_without_sql, load_event())
    assert edges(store) == set()
    assert (d("public.audit"), d("public.daily")) in dataset_flows(store)
