"""The Lineage Job Facet (design §3.2): each shape the facet allows, stored exactly.

Expected edges are written out by hand: `ns/ds` a dataset, `ns/ds#f` a field, `job:ns/name`
a job. Implied dataset edges (mirrors of field edges) are checked separately.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.builders import (
    dataset_entry,
    dataset_input,
    ds,
    job_entry,
    job_input,
    lineage_facet,
    run_event,
)
from tests.conftest import post
from tests.readback import counts, dataset_flows, edges, relations
from upstream.store.engine import Store

W = "postgresql://warehouse"
JOB = ("jobs", "etl")
AIRFLOW = "airflow://production"


def facet_run(*entries: dict[str, Any], run_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return run_event(JOB, run_id=run_id, job_facets=lineage_facet(*entries), **kwargs)


def test_dataset_from_dataset(client: TestClient, store: Store) -> None:
    run = "11111111-1111-4111-8111-111111111111"
    post(client, facet_run(dataset_entry(W, "t", [dataset_input(W, "s")]), run_id=run))
    assert edges(store) == {(f"{W}/s", f"{W}/t")}
    assert relations(store) == {
        (f"{W}/s", "jobs/etl", "read", run),
        (f"{W}/t", "jobs/etl", "write", run),
    }


def test_dataset_from_dataset_field_is_dataset_wide(client: TestClient, store: Store) -> None:
    post(client, facet_run(dataset_entry(W, "t", [dataset_input(W, "s", "region")])))
    assert edges(store) == {(f"{W}/s#region", f"{W}/t")}
    assert edges(store, implied=True) == {(f"{W}/s#region", f"{W}/t"), (f"{W}/s", f"{W}/t")}
    assert dataset_flows(store) == {(f"{W}/s", f"{W}/t")}


def test_field_from_field(client: TestClient, store: Store) -> None:
    post(
        client,
        facet_run(
            dataset_entry(
                W,
                "t",
                fields={
                    "id": [dataset_input(W, "s", "customer_id", type="DIRECT", subtype="IDENTITY")],
                    "total": [dataset_input(W, "s", "amount"), dataset_input(W, "u", "fee")],
                },
            )
        ),
    )
    assert edges(store) == {
        (f"{W}/s#customer_id", f"{W}/t#id"),
        (f"{W}/s#amount", f"{W}/t#total"),
        (f"{W}/u#fee", f"{W}/t#total"),
    }
    assert dataset_flows(store) == {(f"{W}/s", f"{W}/t"), (f"{W}/u", f"{W}/t")}


def test_field_from_whole_dataset(client: TestClient, store: Store) -> None:
    post(client, facet_run(dataset_entry(W, "t", fields={"n": [dataset_input(W, "s")]})))
    assert edges(store) == {(f"{W}/s", f"{W}/t#n")}
    assert dataset_flows(store) == {(f"{W}/s", f"{W}/t")}


def test_dataset_from_other_job(client: TestClient, store: Store) -> None:
    extract_run = "b7dce052-51a6-4d66-98b9-5fd8b78a79c7"
    post(
        client,
        facet_run(dataset_entry(W, "summary", [job_input(AIRFLOW, "daily.extract", extract_run)])),
    )
    assert edges(store) == {(f"job:{AIRFLOW}/daily.extract", f"{W}/summary")}
    # The own job does not write a target only another job feeds.
    assert relations(store) == set()


def test_field_from_own_job_with_no_upstream(client: TestClient, store: Store) -> None:
    run = "22222222-2222-4222-8222-222222222222"
    post(
        client,
        facet_run(
            dataset_entry(W, "extracted", inputs=[], fields={"total": [job_input()]}),
            run_id=run,
            inputs=[ds(W, "raw")],
            outputs=[ds(W, "extracted")],
        ),
    )
    assert edges(store) == {("job:jobs/etl", f"{W}/extracted#total")}
    # `inputs: []` means no upstream: raw is read by the job but feeds nothing.
    assert dataset_flows(store) == set()
    assert (f"{W}/extracted", "jobs/etl", "write", run) in relations(store)


def test_job_from_dataset(client: TestClient, store: Store) -> None:
    post(
        client,
        facet_run(
            job_entry(
                AIRFLOW,
                "daily.load",
                [dataset_input(W, "staging_orders", "order_id", type="INDIRECT", subtype="FILTER")],
            )
        ),
    )
    assert edges(store) == {(f"{W}/staging_orders#order_id", f"job:{AIRFLOW}/daily.load")}
    assert relations(store) == set()


def test_own_job_from_dataset(client: TestClient, store: Store) -> None:
    run = "33333333-3333-4333-8333-333333333333"
    post(client, facet_run(job_entry(inputs=[dataset_input(W, "transactions")]), run_id=run))
    assert edges(store) == {(f"{W}/transactions", "job:jobs/etl")}
    assert relations(store) == {(f"{W}/transactions", "jobs/etl", "read", run)}


def test_job_from_job(client: TestClient, store: Store) -> None:
    post(
        client, facet_run(job_entry(AIRFLOW, "daily.load", [job_input(AIRFLOW, "daily.transform")]))
    )
    assert edges(store) == {(f"job:{AIRFLOW}/daily.transform", f"job:{AIRFLOW}/daily.load")}


def test_seed_003_two_real_edges_not_four(client: TestClient, store: Store) -> None:
    """build_summaries reads customers and orders and writes two summaries independently."""
    event = run_event(
        ("https://example.com/jobs", "build_summaries"),
        inputs=[ds(W, "raw.customers"), ds(W, "raw.orders")],
        outputs=[ds(W, "analytics.customer_summary"), ds(W, "analytics.order_summary")],
        job_facets=lineage_facet(
            dataset_entry(W, "analytics.customer_summary", [dataset_input(W, "raw.customers")]),
            dataset_entry(W, "analytics.order_summary", [dataset_input(W, "raw.orders")]),
        ),
    )
    post(client, event)
    expected = {
        (f"{W}/raw.customers", f"{W}/analytics.customer_summary"),
        (f"{W}/raw.orders", f"{W}/analytics.order_summary"),
    }
    assert edges(store) == expected
    assert dataset_flows(store) == expected


def test_unmentioned_inputs_and_outputs_belong_to_own_job_without_product(
    client: TestClient, store: Store
) -> None:
    run = "44444444-4444-4444-8444-444444444444"
    post(
        client,
        facet_run(
            dataset_entry(W, "x", [dataset_input(W, "a")]),
            run_id=run,
            inputs=[ds(W, "a"), ds(W, "b")],
            outputs=[ds(W, "x"), ds(W, "y")],
        ),
    )
    assert relations(store) == {
        (f"{W}/a", "jobs/etl", "read", run),
        (f"{W}/b", "jobs/etl", "read", run),
        (f"{W}/x", "jobs/etl", "write", run),
        (f"{W}/y", "jobs/etl", "write", run),
    }
    assert dataset_flows(store) == {(f"{W}/a", f"{W}/x")}


def test_mixed_sources_fixture(client: TestClient, store: Store) -> None:
    """The spec's mixed-sources example: a dataset and a job feed one target and one field."""
    entry = dataset_entry(
        "postgresql://warehouse:5432",
        "public.enriched_orders",
        [
            dataset_input("postgresql://warehouse:5432", "public.orders"),
            job_input(AIRFLOW, "daily.enrichment"),
        ],
        fields={
            "customer_segment": [
                dataset_input("postgresql://warehouse:5432", "public.orders", "customer_id"),
                job_input(AIRFLOW, "daily.enrichment"),
            ]
        },
    )
    post(client, facet_run(entry))
    pg = "postgresql://warehouse:5432"
    assert edges(store) == {
        (f"{pg}/public.orders", f"{pg}/public.enriched_orders"),
        (f"job:{AIRFLOW}/daily.enrichment", f"{pg}/public.enriched_orders"),
        (f"{pg}/public.orders#customer_id", f"{pg}/public.enriched_orders#customer_segment"),
        (f"job:{AIRFLOW}/daily.enrichment", f"{pg}/public.enriched_orders#customer_segment"),
    }


def test_entries_accumulate_across_a_runs_events(client: TestClient, store: Store) -> None:
    run = "55555555-5555-4555-8555-555555555555"
    post(
        client,
        facet_run(dataset_entry(W, "x", [dataset_input(W, "a")]), run_id=run, event_type="START"),
        facet_run(dataset_entry(W, "y", [dataset_input(W, "b")]), run_id=run),
    )
    assert edges(store) == {(f"{W}/a", f"{W}/x"), (f"{W}/b", f"{W}/y")}


def test_half_identified_job_reference_is_rejected(client: TestClient, store: Store) -> None:
    before = counts(store)
    for bad, where in [
        (job_entry(namespace=AIRFLOW), "job.facets.lineage.entries[0]"),
        (job_entry(name="daily.load"), "job.facets.lineage.entries[0]"),
        (
            dataset_entry(W, "t", [{"type": "JOB", "namespace": AIRFLOW}]),
            "job.facets.lineage.entries[0].inputs[0]",
        ),
    ]:
        response = client.post("/api/v1/lineage", json=facet_run(bad))
        assert response.status_code == 422
        body = response.json()
        assert body["errors"][0]["path"] == where
        assert "namespace" in body["message"]
        assert "name" in body["message"]
    assert counts(store) == before


def test_dataset_entry_without_name_is_rejected(client: TestClient, store: Store) -> None:
    before = counts(store)
    entry = {"type": "DATASET", "namespace": W}
    response = client.post("/api/v1/lineage", json=facet_run(dataset_input(W, "ok"), entry))
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "job.facets.lineage.entries[1].name"
    assert counts(store) == before
