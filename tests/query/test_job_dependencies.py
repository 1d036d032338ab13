"""Job dependencies (design §3.3): the `jobDependencies` run facet becomes control-flow
edges between jobs, shown in job lineage and run lineage with their kind, never in dataset
walks. Events are shaped as the spec's example (the OpenLineage docs' "Job Dependencies
Facet" page and JobDependenciesRunFacet.json 1-0-1, `dependency_type`; 1-0-0's `type` too).

The story, worked by hand: `pipeline.transform/user-profile-transform` run T waits for
`pipeline.ingest/data-extract` (no run named) and for run C of
`pipeline.preprocessing/orders-cleanup`; it invokes run L of `pipeline.load/analytics-load` and
`pipeline.notifications/email-send` (no run). Run L says the same edge from its end. Run X of
data-extract waits for `pipeline.ingest/raw-landing`. T also writes `warehouse/profiles`, which
L reads: data flow, which the dependency never joins.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, PRODUCER, ds, run_event
from tests.conftest import post
from upstream.api.app import create_app
from upstream.ingest.rebuild import rebuild
from upstream.model.identity import JobRef
from upstream.retention import prune_store
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.change_log import RUNS, changes_since, position
from upstream.store.engine import Store

T = "6e9c2bb0-97d9-4d4f-9c0c-0579f072e013"
C = "bfc2d9b6-891a-4eee-8ef4-a45891b7c9fd"
L = "a2ac0b8b-459c-44d0-b7d2-db6109ef5768"
X = "7070ca59-60e0-4dbe-a1f5-4ee0c3a3195c"
SCHEMA = "https://openlineage.io/spec/facets/1-0-1/JobDependenciesRunFacet.json"
WINDOW = {
    "start": (BASE_TIME - timedelta(days=1)).isoformat(),
    "end": (BASE_TIME + timedelta(days=1)).isoformat(),
}
TRANSFORM = ("pipeline.transform", "user-profile-transform")
EXTRACT = ("pipeline.ingest", "data-extract")
CLEANUP = ("pipeline.preprocessing", "orders-cleanup")
LOAD = ("pipeline.load", "analytics-load")
EMAIL = ("pipeline.notifications", "email-send")
LANDING = ("pipeline.ingest", "raw-landing")


def key(job: tuple[str, str]) -> str:
    return f"job.{job[0].replace('.', '%2E')}.{job[1]}"


def dependency(
    job: tuple[str, str], run: str | None = None, kind: str = "IMPLICIT_DEPENDENCY", **rules: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "dependency_type": kind,
        "sequence_trigger_rule": "FINISH_TO_START",
        "status_trigger_rule": "EXECUTE_ON_SUCCESS",
        "job": {"namespace": job[0], "name": job[1]},
        **rules,
    }
    if run is not None:
        entry["run"] = {"runId": run}
    return entry


def facet(
    upstream: list[Any] | None = None, downstream: list[Any] | None = None, **more: Any
) -> Any:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"{SCHEMA}#/$defs/JobDependenciesRunFacet",
        **({"upstream": upstream} if upstream is not None else {}),
        **({"downstream": downstream} if downstream is not None else {}),
        **more,
    }


def transform_start() -> dict[str, Any]:
    """T's START knows only what it waited for."""
    return run_event(
        TRANSFORM,
        run_id=T,
        event_type="START",
        run_facets={"jobDependencies": facet([dependency(EXTRACT)])},
    )


def transform_complete() -> dict[str, Any]:
    """T's COMPLETE, an hour later, states everything; orders-cleanup's rule is new."""
    return run_event(
        TRANSFORM,
        run_id=T,
        time=BASE_TIME + timedelta(hours=1),
        outputs=[ds("warehouse", "profiles")],
        run_facets={
            "jobDependencies": facet(
                [
                    dependency(EXTRACT),
                    dependency(CLEANUP, C, status_trigger_rule="EXECUTE_EVERY_TIME"),
                ],
                [
                    dependency(LOAD, L, "DIRECT_INVOCATION"),
                    dependency(EMAIL, None, "DIRECT_INVOCATION"),
                ],
                trigger_rule="NONE_FAILED_MIN_ONE_SUCCESS",
            )
        },
    )


def load_complete() -> dict[str, Any]:
    """L states the edge from T from its own end, in the 1-0-0 shape (`type`)."""
    entry = dependency(TRANSFORM, T, "DIRECT_INVOCATION")
    entry["type"] = entry.pop("dependency_type")
    return run_event(
        LOAD,
        run_id=L,
        time=BASE_TIME + timedelta(hours=2),
        inputs=[ds("warehouse", "profiles")],
        run_facets={"jobDependencies": facet([entry])},
    )


def extract_complete() -> dict[str, Any]:
    return run_event(
        EXTRACT,
        run_id=X,
        time=BASE_TIME - timedelta(hours=1),
        run_facets={"jobDependencies": facet([dependency(LANDING)])},
    )


def story() -> list[dict[str, Any]]:
    return [transform_start(), transform_complete(), load_complete(), extract_complete()]


def edge(
    upstream: tuple[str, str],
    downstream: tuple[str, str],
    runs: list[tuple[str | None, str | None]],
    kind: str = "IMPLICIT_DEPENDENCY",
    status: str = "EXECUTE_ON_SUCCESS",
    trigger: str | None = None,
) -> dict[str, Any]:
    return {
        "upstream": key(upstream),
        "downstream": key(downstream),
        "dependencyType": kind,
        "sequenceTriggerRule": "FINISH_TO_START",
        "statusTriggerRule": status,
        "triggerRule": trigger,
        "runs": [{"upstream": up, "downstream": down} for up, down in runs],
    }


WAITED_FOR = [
    edge(EXTRACT, TRANSFORM, [(None, T)], trigger="NONE_FAILED_MIN_ONE_SUCCESS"),
    edge(
        CLEANUP,
        TRANSFORM,
        [(C, T)],
        status="EXECUTE_EVERY_TIME",
        trigger="NONE_FAILED_MIN_ONE_SUCCESS",
    ),
]
WAITING = [
    edge(TRANSFORM, LOAD, [(T, L)], kind="DIRECT_INVOCATION"),
    edge(TRANSFORM, EMAIL, [(T, None)], kind="DIRECT_INVOCATION"),
]


def job_lineage(client: TestClient, job: tuple[str, str], **params: Any) -> dict[str, Any]:
    response = client.get(
        f"/v3/namespaces/{job[0]}/jobs/{job[1]}/lineage", params={**WINDOW, **params}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def stored(store: Store) -> set[tuple[Any, ...]]:
    c = t.job_dependencies.c
    with store.read() as conn:
        rows = conn.execute(
            sa.select(
                c.run_id,
                c.upstream_job_id,
                c.upstream_run_id,
                c.downstream_job_id,
                c.downstream_run_id,
                c.dependency_type,
                c.status_trigger_rule,
                c.trigger_rule,
            )
        ).all()
    return {tuple(row) for row in rows}


def test_upstream_dependencies_of_a_job_one_level(client: TestClient) -> None:
    post(client, *story())
    answer = job_lineage(client, TRANSFORM, direction="upstream", levels=1)
    assert answer["jobDependencies"] == WAITED_FOR
    # Every job named is a program of the answer, so a graph can draw the edges.
    assert {key(EXTRACT), key(CLEANUP), key(TRANSFORM)} <= set(answer["programs"])
    assert answer["programs"][key(CLEANUP)] == {
        "entityId": {"type": "job", "namespace": CLEANUP[0], "name": CLEANUP[1]}
    }


def test_dependencies_are_walked_levels_deep(client: TestClient) -> None:
    post(client, *story())
    answer = job_lineage(client, TRANSFORM, direction="upstream", levels=2)
    landing = edge(LANDING, EXTRACT, [(None, X)])
    assert answer["jobDependencies"] == [WAITED_FOR[0], landing, WAITED_FOR[1]]


def test_downstream_dependencies_merge_both_ends_statements(client: TestClient) -> None:
    post(client, *story())
    answer = job_lineage(client, TRANSFORM, direction="downstream", levels=1)
    # T said T -> L and L said the same edge: one entry, one pair of runs.
    assert answer["jobDependencies"] == WAITING


def test_both_directions_and_data_flow_stay_apart(client: TestClient) -> None:
    post(client, *story())
    answer = job_lineage(client, TRANSFORM, levels=1)
    assert answer["jobDependencies"] == sorted(
        WAITED_FOR + WAITING, key=lambda e: (e["upstream"], e["downstream"])
    )
    # The data flow: T wrote profiles, L read it; no relation joins a job to a job.
    assert {(r["data"], r["program"], r["accesses"][0]) for r in answer["relations"]} == {
        ("dataset.warehouse.profiles", key(TRANSFORM), "write"),
        ("dataset.warehouse.profiles", key(LOAD), "read"),
    }


def test_dataset_lineage_carries_no_dependencies(client: TestClient) -> None:
    post(client, *story())
    response = client.get("/v3/namespaces/warehouse/datasets/profiles/lineage", params=WINDOW)
    answer = response.json()
    assert "jobDependencies" not in answer
    assert set(answer["programs"]) == {key(TRANSFORM), key(LOAD)}


def test_a_window_without_the_stating_runs_shows_no_dependencies(client: TestClient) -> None:
    post(client, *story())
    later = {
        "start": (BASE_TIME + timedelta(days=3)).isoformat(),
        "end": (BASE_TIME + timedelta(days=4)).isoformat(),
    }
    response = client.get(
        f"/v3/namespaces/{TRANSFORM[0]}/jobs/{TRANSFORM[1]}/lineage", params=later
    )
    assert response.json()["jobDependencies"] == []


def test_a_deleted_job_leaves_the_dependencies(client: TestClient) -> None:
    post(client, *story())
    deleted = client.delete(f"/api/v1/namespaces/{CLEANUP[0]}/jobs/{CLEANUP[1]}")
    assert deleted.status_code == 200, deleted.text
    answer = job_lineage(client, TRANSFORM, direction="upstream", levels=1)
    assert answer["jobDependencies"] == WAITED_FOR[:1]


def run_dependency(
    upstream: tuple[str, str],
    up_run: str | None,
    downstream: tuple[str, str],
    down_run: str | None,
    kind: str,
    status: str = "EXECUTE_ON_SUCCESS",
    trigger: str | None = None,
) -> dict[str, Any]:
    return {
        "upstream": {"namespace": upstream[0], "name": upstream[1], "runId": up_run},
        "downstream": {"namespace": downstream[0], "name": downstream[1], "runId": down_run},
        "dependencyType": kind,
        "sequenceTriggerRule": "FINISH_TO_START",
        "statusTriggerRule": status,
        "triggerRule": trigger,
    }


def test_run_lineage_lists_the_runs_dependencies(client: TestClient) -> None:
    post(client, *story())
    answer = client.get(f"/v3/runs/{T}/lineage").json()
    trigger = "NONE_FAILED_MIN_ONE_SUCCESS"
    assert answer["jobDependencies"] == [
        run_dependency(EXTRACT, None, TRANSFORM, T, "IMPLICIT_DEPENDENCY", trigger=trigger),
        run_dependency(
            CLEANUP, C, TRANSFORM, T, "IMPLICIT_DEPENDENCY", "EXECUTE_EVERY_TIME", trigger
        ),
        run_dependency(TRANSFORM, T, LOAD, L, "DIRECT_INVOCATION"),
        run_dependency(TRANSFORM, T, EMAIL, None, "DIRECT_INVOCATION"),
    ]
    upstream = client.get(f"/v3/runs/{T}/lineage", params={"direction": "upstream"}).json()
    assert [d["upstream"]["name"] for d in upstream["jobDependencies"]] == [
        "data-extract",
        "orders-cleanup",
    ]
    # L is the downstream end of one edge, which T and L both stated.
    from_load = client.get(f"/v3/runs/{L}/lineage").json()["jobDependencies"]
    assert from_load == [run_dependency(TRANSFORM, T, LOAD, L, "DIRECT_INVOCATION")]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_every_arrival_order_stores_the_same_edges(
    client: TestClient, store: Store, order: tuple[int, ...]
) -> None:
    events = [transform_start(), transform_complete(), load_complete()]
    for index in order:
        post(client, events[index])
    t_run, l_run, c_run = uuid.UUID(T), uuid.UUID(L), uuid.UUID(C)
    transform, load = JobRef(*TRANSFORM).id, JobRef(*LOAD).id
    trigger = "NONE_FAILED_MIN_ONE_SUCCESS"
    assert stored(store) == {
        # The START said this edge without a trigger rule; the later COMPLETE counts.
        (t_run, JobRef(*EXTRACT).id, None, transform, t_run, "IMPLICIT_DEPENDENCY",
         "EXECUTE_ON_SUCCESS", trigger),
        (t_run, JobRef(*CLEANUP).id, c_run, transform, t_run, "IMPLICIT_DEPENDENCY",
         "EXECUTE_EVERY_TIME", trigger),
        (t_run, transform, t_run, load, l_run, "DIRECT_INVOCATION", "EXECUTE_ON_SUCCESS", None),
        (t_run, transform, t_run, JobRef(*EMAIL).id, None, "DIRECT_INVOCATION",
         "EXECUTE_ON_SUCCESS", None),
        (l_run, transform, t_run, load, l_run, "DIRECT_INVOCATION", "EXECUTE_ON_SUCCESS", None),
    }  # fmt: skip


def test_the_jobs_named_become_jobs(client: TestClient) -> None:
    post(client, transform_complete())
    response = client.get(f"/api/v1/namespaces/{CLEANUP[0]}/jobs/{CLEANUP[1]}")
    assert response.status_code == 200, response.text


def test_a_run_naming_itself_is_no_dependency(client: TestClient, store: Store) -> None:
    post(
        client,
        run_event(
            TRANSFORM,
            run_id=T,
            run_facets={"jobDependencies": facet([dependency(TRANSFORM, T)], None)},
        ),
    )
    assert stored(store) == set()


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"upstream": [{"job": {"namespace": "a"}}]},
         "run.facets.jobDependencies.upstream[0].job.name"),
        ({"downstream": [{"job": {"namespace": "a", "name": "b"}, "run": {"runId": "x"}}]},
         "run.facets.jobDependencies.downstream[0].run.runId"),
        ({"upstream": "data-extract"}, "run.facets.jobDependencies.upstream"),
    ],
)  # fmt: skip
def test_a_malformed_facet_is_refused_naming_the_path(
    client: TestClient, store: Store, bad: dict[str, Any], path: str
) -> None:
    event = run_event(TRANSFORM, run_id=T, run_facets={"jobDependencies": facet(**bad)})
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422, response.text
    assert path in response.text
    assert stored(store) == set()
    assert client.get(f"/api/v1/jobs/runs/{T}").status_code == 404


def test_the_write_is_in_the_change_log(store: Store, client: TestClient) -> None:
    post(client, transform_start())
    with store.read() as conn:
        before = position(conn)
    post(client, load_complete())
    with store.read() as conn:
        changes = changes_since(conn, before)
    runs = {i for change in changes if change.kind == RUNS for i in change.ids}
    assert uuid.UUID(L) in runs


def test_rebuild_derives_the_same_edges(client: TestClient, store: Store) -> None:
    post(client, *story())
    before = stored(store)
    assert len(before) == 6
    rebuild(store)
    assert stored(store) == before


def test_prune_removes_the_edges_of_the_runs_it_removes(client: TestClient, store: Store) -> None:
    post(client, *story())
    report = prune_store(store, BASE_TIME + timedelta(minutes=30))
    assert report is not None
    # Only X (ended an hour before BASE_TIME) ended before the cutoff.
    assert report.removed["job_dependencies"] == 1
    assert all(row[0] != uuid.UUID(X) for row in stored(store))
    # raw-landing, named only by X's edge, goes; data-extract stays (T's edge names it).
    assert client.get(f"/api/v1/namespaces/{LANDING[0]}/jobs/{LANDING[1]}").status_code == 404
    assert client.get(f"/api/v1/namespaces/{EXTRACT[0]}/jobs/{EXTRACT[1]}").status_code == 200


def test_a_capped_answer_keeps_the_nearest_dependencies(db_url: str) -> None:
    """Three nodes at most: the job and the two it waits for fit, raw-landing (two hops
    away) does not, and the answer says it was cut."""
    settings = Settings(db_url=db_url, max_lineage_nodes=3)
    with TestClient(create_app(settings, migrate=False)) as small:
        post(small, *story())
        answer = job_lineage(small, TRANSFORM, direction="upstream", levels=2)
    assert answer["jobDependencies"] == WAITED_FOR
    assert answer["truncated"] is True
    assert set(answer["programs"]) == {key(EXTRACT), key(CLEANUP), key(TRANSFORM)}
