"""Ingestion rules beyond the facet's shapes (design §3.1 to §3.4): precedence, the inferred
product, declarations, accumulation, parents, idempotency, atomic batches."""

from __future__ import annotations

import json
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
    job_event,
    lineage_facet,
    run_event,
)
from tests.conftest import post
from tests.readback import counts, dataset_flows, dataset_row, edges, job_row, relations, run_row
from upstream.store.engine import Store

N = "pg://db"
JOB = ("etl", "load")


# -- precedence per output ------------------------------------------------------------------


def test_lineage_facet_wins_over_column_lineage_for_the_same_output(
    client: TestClient, store: Store
) -> None:
    event = run_event(
        JOB,
        inputs=[ds(N, "a"), ds(N, "b")],
        outputs=[
            ds(N, "x", columnLineage=column_lineage({"id": [(N, "b", "id")]})),
            ds(N, "y", columnLineage=column_lineage({"id": [(N, "b", "key")]})),
        ],
        job_facets=lineage_facet(
            dataset_entry(N, "x", fields={"id": [dataset_input(N, "a", "id")]})
        ),
    )
    post(client, event)
    # x is described by the facet (a.id), its columnLineage (b.id) is ignored; y keeps its own.
    assert edges(store) == {(f"{N}/a#id", f"{N}/x#id"), (f"{N}/b#key", f"{N}/y#id")}
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x"), (f"{N}/b", f"{N}/y")}


def test_precedence_holds_across_a_runs_events(client: TestClient, store: Store) -> None:
    run = "66666666-6666-4666-8666-666666666666"
    start = run_event(
        JOB,
        run_id=run,
        event_type="START",
        inputs=[ds(N, "a"), ds(N, "b")],
        outputs=[ds(N, "x", columnLineage=column_lineage({"id": [(N, "b", "id")]}))],
    )
    complete = run_event(
        JOB,
        run_id=run,
        time=BASE_TIME + hours(1),
        job_facets=lineage_facet(
            dataset_entry(N, "x", fields={"id": [dataset_input(N, "a", "id")]})
        ),
    )
    post(client, start, complete)
    assert edges(store) == {(f"{N}/a#id", f"{N}/x#id")}
    # And a later columnLineage for the same output in the same run does not come back.
    post(
        client,
        run_event(
            JOB,
            run_id=run,
            event_type="OTHER",
            time=BASE_TIME + hours(2),
            outputs=[ds(N, "x", columnLineage=column_lineage({"id": [(N, "c", "id")]}))],
        ),
    )
    assert edges(store) == {(f"{N}/a#id", f"{N}/x#id")}


def test_column_lineage_beats_the_product_and_keeps_unlisted_columns(
    client: TestClient, store: Store
) -> None:
    schema = {"fields": [{"name": "id", "type": "int"}]}
    post(
        client,
        run_event(
            JOB,
            inputs=[ds(N, "a"), ds(N, "b")],
            outputs=[
                ds(
                    N,
                    "x",
                    schema=schema,
                    columnLineage=column_lineage(
                        {"id": [(N, "a", "id")], "not_in_schema": [(N, "a", "secret")]},
                        dataset=[(N, "b", "region")],
                    ),
                )
            ],
        ),
    )
    assert edges(store) == {
        (f"{N}/a#id", f"{N}/x#id"),
        (f"{N}/a#secret", f"{N}/x#not_in_schema"),
        (f"{N}/b#region", f"{N}/x"),
    }
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x"), (f"{N}/b", f"{N}/x")}


def test_column_lineage_sources_missing_from_inputs_are_upstream(
    client: TestClient, store: Store
) -> None:
    """dbt names its seeds only in columnLineage; they are upstream all the same."""
    run = "77777777-7777-4777-8777-777777777777"
    post(
        client,
        run_event(
            JOB,
            run_id=run,
            outputs=[ds(N, "stg", columnLineage=column_lineage({"id": [(N, "raw", "id")]}))],
        ),
    )
    assert dataset_flows(store) == {(f"{N}/raw", f"{N}/stg")}
    assert (f"{N}/raw", "etl/load", "read", run) in relations(store)


# -- the inferred product -------------------------------------------------------------------


def test_without_facets_every_input_feeds_every_output(client: TestClient, store: Store) -> None:
    post(client, run_event(JOB, inputs=[ds(N, "a"), ds(N, "b")], outputs=[ds(N, "x"), ds(N, "y")]))
    assert edges(store) == set()
    assert dataset_flows(store) == {
        (f"{N}/a", f"{N}/x"),
        (f"{N}/a", f"{N}/y"),
        (f"{N}/b", f"{N}/x"),
        (f"{N}/b", f"{N}/y"),
    }


def test_product_accumulates_across_a_runs_events(client: TestClient, store: Store) -> None:
    run = "88888888-8888-4888-8888-888888888888"
    post(
        client,
        run_event(JOB, run_id=run, event_type="START", inputs=[ds(N, "a")]),
        run_event(JOB, run_id=run, time=BASE_TIME + hours(1), outputs=[ds(N, "x")]),
    )
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x")}


def test_a_facet_in_any_event_of_a_run_stops_the_product(client: TestClient, store: Store) -> None:
    run = "99999999-9999-4999-8999-999999999999"
    post(
        client,
        run_event(
            JOB,
            run_id=run,
            event_type="START",
            inputs=[ds(N, "a"), ds(N, "b")],
            outputs=[ds(N, "x"), ds(N, "y")],
        ),
        run_event(
            JOB,
            run_id=run,
            time=BASE_TIME + hours(1),
            job_facets=lineage_facet(dataset_entry(N, "x", [dataset_input(N, "a")])),
        ),
    )
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x")}


def test_runs_are_separate_for_the_product(client: TestClient, store: Store) -> None:
    post(
        client,
        run_event(JOB, inputs=[ds(N, "a")], outputs=[ds(N, "x")]),
        run_event(JOB, inputs=[ds(N, "b")], outputs=[ds(N, "y")]),
    )
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x"), (f"{N}/b", f"{N}/y")}


# -- declarations ---------------------------------------------------------------------------


def test_latest_job_event_replaces_declared_lineage(client: TestClient, store: Store) -> None:
    def declared(source: str, hour: int) -> dict[str, Any]:
        return job_event(
            JOB,
            time=BASE_TIME + hours(hour),
            inputs=[ds(N, source)],
            outputs=[ds(N, "x")],
            job_facets=lineage_facet(dataset_entry(N, "x", [dataset_input(N, source)])),
        )

    post(client, declared("a", 1))
    assert edges(store) == {(f"{N}/a", f"{N}/x")}
    post(client, declared("b", 2))
    assert edges(store) == {(f"{N}/b", f"{N}/x")}
    assert relations(store) == {
        (f"{N}/b", "etl/load", "read", None),
        (f"{N}/x", "etl/load", "write", None),
    }
    post(client, declared("c", 0))  # older, arriving late: the newer declaration stands
    assert edges(store) == {(f"{N}/b", f"{N}/x")}
    assert dataset_flows(store) == {(f"{N}/b", f"{N}/x")}


def test_job_event_without_facet_declares_inputs_and_outputs(
    client: TestClient, store: Store
) -> None:
    post(client, job_event(JOB, inputs=[ds(N, "a")], outputs=[ds(N, "x")]))
    assert relations(store) == {
        (f"{N}/a", "etl/load", "read", None),
        (f"{N}/x", "etl/load", "write", None),
    }
    assert dataset_flows(store) == {(f"{N}/a", f"{N}/x")}


def test_dataset_event_lineage_facet_declares_the_datasets_lineage(
    client: TestClient, store: Store
) -> None:
    facet = {
        "inputs": [dataset_input(N, "customers")],
        "fields": {"customer_id": {"inputs": [dataset_input(N, "customers", "id")]}},
    }
    post(client, dataset_event(N, "summary", lineage=facet))
    assert edges(store) == {
        (f"{N}/customers", f"{N}/summary"),
        (f"{N}/customers#id", f"{N}/summary#customer_id"),
    }
    replacement = {"inputs": [dataset_input(N, "orders")]}
    post(client, dataset_event(N, "summary", time=BASE_TIME + hours(1), lineage=replacement))
    assert edges(store) == {(f"{N}/orders", f"{N}/summary")}


# -- runs, parents, facets ------------------------------------------------------------------


def test_run_state_and_times_accumulate(client: TestClient, store: Store) -> None:
    run = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
    # COMPLETE arrives before START; the state is the latest by event time.
    post(
        client,
        run_event(
            JOB,
            run_id=run,
            event_type="COMPLETE",
            time=BASE_TIME + hours(2),
            run_facets={"custom": {"a": 1}},
        ),
        run_event(
            JOB,
            run_id=run,
            event_type="START",
            time=BASE_TIME,
            run_facets={"custom": {"b": 2}, "other": {}},
        ),
    )
    row = run_row(store, run)
    assert row["state"] == "COMPLETE"
    assert row["started_at"].replace(tzinfo=None) == BASE_TIME.replace(tzinfo=None)
    assert row["ended_at"].replace(tzinfo=None) == (BASE_TIME + hours(2)).replace(tzinfo=None)
    # A facet re-sent under the same name replaces the old one.
    assert row["facets"] == {"custom": {"b": 2}, "other": {}}


def test_parent_facet_links_runs_and_marks_the_workflow(client: TestClient, store: Store) -> None:
    workflow_run = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
    child = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
    post(
        client, run_event(("etl", "step"), run_id=child, parent=(("etl", "nightly"), workflow_run))
    )
    assert str(run_row(store, child)["parent_run_id"]) == workflow_run
    parent = run_row(store, workflow_run)
    assert parent["has_events"] is False
    assert job_row(store, "etl", "nightly")["seen_as_parent"] is True
    assert job_row(store, "etl", "step")["seen_as_parent"] is False


def test_a_run_naming_itself_or_its_job_as_parent_has_no_parent(
    client: TestClient, store: Store
) -> None:
    run = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
    other = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"
    post(
        client,
        run_event(JOB, run_id=run, parent=(JOB, other)),
        run_event(("etl", "solo"), run_id=other, parent=(("etl", "solo2"), other)),
    )
    assert run_row(store, run)["parent_run_id"] is None
    assert run_row(store, other)["parent_run_id"] is None
    assert job_row(store, *JOB)["seen_as_parent"] is False


def test_parent_chains_never_loop(client: TestClient, store: Store) -> None:
    a = "0a0a0a0a-0000-4000-8000-000000000001"
    b = "0b0b0b0b-0000-4000-8000-000000000002"
    post(
        client,
        run_event(("w", "a"), run_id=a, parent=(("w", "b"), b)),
        run_event(("w", "b"), run_id=b, parent=(("w", "a"), a)),
    )
    parents = {run_row(store, a)["parent_run_id"], run_row(store, b)["parent_run_id"]}
    assert None in parents  # the second link would have closed a cycle


def test_nested_parent_with_root(client: TestClient, store: Store) -> None:
    task_run = "01010101-0000-4000-8000-000000000001"
    dag_run = "02020202-0000-4000-8000-000000000002"
    child = "03030303-0000-4000-8000-000000000003"
    event = run_event(("spark", "job"), run_id=child)
    event["run"]["facets"]["parent"] = {
        "run": {"runId": task_run},
        "job": {"namespace": "airflow", "name": "dag.task"},
        "root": {"run": {"runId": dag_run}, "job": {"namespace": "airflow", "name": "dag"}},
    }
    post(client, event)
    assert str(run_row(store, child)["parent_run_id"]) == task_run
    assert str(run_row(store, child)["root_run_id"]) == dag_run
    assert str(run_row(store, task_run)["parent_run_id"]) == dag_run


def test_a_run_id_reported_for_two_jobs_is_rejected(client: TestClient, store: Store) -> None:
    run = "04040404-0000-4000-8000-000000000004"
    post(client, run_event(JOB, run_id=run))
    before = counts(store)
    response = client.post(
        "/api/v1/lineage", json=run_event(("etl", "other"), run_id=run, time=BASE_TIME + hours(1))
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "run.runId"
    assert counts(store) == before


def test_interpreted_facets_are_stored(client: TestClient, store: Store) -> None:
    schema = {
        "fields": [
            {
                "name": "address",
                "type": "struct",
                "fields": [{"name": "city", "type": "string", "description": "town"}],
            }
        ]
    }
    symlinks = {"identifiers": [{"namespace": "hive://h", "name": "db.t", "type": "TABLE"}]}
    post(
        client,
        run_event(
            JOB,
            job_facets={
                "jobType": {"jobType": "DAG", "integration": "AIRFLOW", "processingType": "BATCH"}
            },
            outputs=[
                ds(
                    N,
                    "x",
                    schema=schema,
                    symlinks=symlinks,
                    lifecycleStateChange={"lifecycleStateChange": "CREATE"},
                )
            ],
        ),
    )
    row = dataset_row(store, N, "x")
    assert row["fields"] == [
        {
            "name": "address",
            "type": "struct",
            "fields": [{"name": "city", "type": "string", "description": "town"}],
        }
    ]
    assert row["facets"]["symlinks"] == symlinks
    job = job_row(store, *JOB)
    assert (job["job_type"], job["integration"], job["processing_type"]) == (
        "DAG",
        "AIRFLOW",
        "BATCH",
    )


# -- idempotency, batches, raw events -------------------------------------------------------


def test_reposting_an_event_changes_nothing(client: TestClient, store: Store) -> None:
    event = run_event(JOB, inputs=[ds(N, "a")], outputs=[ds(N, "x")])
    post(client, event)
    before = counts(store)
    post(client, event)
    assert counts(store) == before


def test_batch_is_all_or_nothing(client: TestClient, store: Store) -> None:
    good = run_event(JOB, inputs=[ds(N, "a")], outputs=[ds(N, "x")])
    bad = run_event(JOB)
    bad["run"]["runId"] = "not-a-uuid"
    before = counts(store)
    response = client.post("/api/v1/lineage", json=[good, bad])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "[1].run.runId"
    assert counts(store) == before
    response = client.post("/api/v1/lineage", json=[good, run_event(JOB)])
    assert response.status_code == 201
    assert response.content == b""
    assert counts(store)["events"] == 2


def test_every_accepted_event_is_kept_verbatim(client: TestClient, store: Store) -> None:
    import sqlalchemy as sa

    from upstream.store.payloads import unpack
    from upstream.store.schema import events

    event = run_event(JOB, run_facets={"unknown_facet": {"nested": [1, 2.5, None, "é"]}})
    event["strayTopLevelKey"] = {"kept": True}
    post(client, event)
    with store.read() as conn:
        (payload,) = unpack(conn, [conn.execute(sa.select(events.c.payload_zstd)).scalar_one()])
    assert json.loads(payload) == event


def test_gzip_body(client: TestClient, store: Store) -> None:
    import gzip

    body = gzip.compress(json.dumps([run_event(JOB), run_event(JOB)]).encode())
    response = client.post(
        "/api/v1/lineage",
        content=body,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert response.status_code == 201
    assert counts(store)["events"] == 2


def test_metadata_only_events_keep_declared_lineage(client: TestClient, store: Store) -> None:
    post(
        client,
        dataset_event(N, "summary", lineage={"inputs": [dataset_input(N, "orders")]}),
        job_event(JOB, inputs=[ds(N, "a")], outputs=[ds(N, "x")]),
    )
    later = BASE_TIME + hours(1)
    post(
        client,
        dataset_event(N, "summary", time=later, schema={"fields": [{"name": "id"}]}),
        job_event(JOB, time=later, job_facets={"documentation": {"description": "loads x"}}),
    )
    assert edges(store) == {(f"{N}/orders", f"{N}/summary")}
    assert relations(store) == {
        (f"{N}/a", "etl/load", "read", None),
        (f"{N}/x", "etl/load", "write", None),
    }
    assert dataset_row(store, N, "summary")["fields"] == [{"name": "id"}]
    assert job_row(store, *JOB)["description"] == "loads x"
