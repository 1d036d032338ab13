"""rollup=workflow and temporary datasets in the dataset lineage API (design §3.4, §4.2).

Workflows are built the way producers report them: each task run carries a `parent` facet
naming the workflow run.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event
from tests.query.test_dataset_lineage import NS, job, lineage, post, rels, rid, run, workflow


def test_rollup_replaces_runs_inside_a_workflow_run(client: TestClient) -> None:
    w, m, s, r3, r5 = rid(), rid(), rid(), rid(), rid()
    wf1 = ((NS, "wf1"), w)
    post(
        client,
        run("mr1", m, writes=["D1"], reads=["D2"], parent=wf1),
        run("spark1", s, writes=["D2"], reads=["D3"], parent=wf1),
        run("P3", r3, writes=["D1"]),
        run("P5", r5, reads=["D1"]),
    )
    rolled = lineage(client, "D1", levels=100, rollup="workflow")
    assert rels(rolled) == {
        ("D1", workflow("wf1"), "write", w),
        ("D2", workflow("wf1"), "read", w),
        ("D2", workflow("wf1"), "write", w),
        ("D3", workflow("wf1"), "read", w),
        ("D1", job("P3"), "write", r3),
        ("D1", job("P5"), "read", r5),
    }
    assert rolled["programs"] == {
        "job.ns.P3": {"entityId": {"type": "job", "namespace": NS, "name": "P3"}},
        "job.ns.P5": {"entityId": {"type": "job", "namespace": NS, "name": "P5"}},
        "workflow.ns.wf1": {"entityId": {"type": "workflow", "namespace": NS, "name": "wf1"}},
    }
    assert rels(lineage(client, "D1", levels=100)) == {
        ("D1", job("mr1"), "write", m),
        ("D2", job("mr1"), "read", m),
        ("D2", job("spark1"), "write", s),
        ("D3", job("spark1"), "read", s),
        ("D1", job("P3"), "write", r3),
        ("D1", job("P5"), "read", r5),
    }
    # One level reaches the whole workflow run when the workflow stands for its programs...
    assert rels(lineage(client, "D1", levels=1, rollup="workflow")) == rels(rolled)
    # ...but only mr1's relations when the programs stand for themselves.
    assert rels(lineage(client, "D1", levels=1)) == {
        ("D1", job("mr1"), "write", m),
        ("D2", job("mr1"), "read", m),
        ("D1", job("P3"), "write", r3),
        ("D1", job("P5"), "read", r5),
    }
    # Along data flow: P3 made D1 from nothing; P5 only reads it.
    assert rels(lineage(client, "D1", levels=100, rollup="workflow", direction="upstream")) == {
        ("D1", workflow("wf1"), "write", w),
        ("D2", workflow("wf1"), "read", w),
        ("D2", workflow("wf1"), "write", w),
        ("D3", workflow("wf1"), "read", w),
        ("D1", job("P3"), "write", r3),
    }
    assert rels(lineage(client, "D1", rollup="workflow", direction="downstream")) == {
        ("D1", job("P5"), "read", r5)
    }
    again = client.get(
        "/v3/namespaces/ns/datasets/D1/lineage",
        # A fixed end: `now` would move between the two requests.
        params={"levels": 100, "rollup": "workflow", "start": "0", "end": "4102444800"},
    )
    assert again.status_code == 200
    assert again.content == client.get(str(again.request.url)).content


def test_a_job_inside_and_outside_workflows(client: TestClient) -> None:
    """mr1's run inside wf1 rolls up; its standalone run stays mr1's."""
    w, m, m2 = rid(), rid(), rid()
    post(
        client,
        run("mr1", m, writes=["D1"], reads=["D2"], parent=((NS, "wf1"), w)),
        run("mr1", m2, writes=["D1"], reads=["D9"]),
    )
    assert rels(lineage(client, "D1", rollup="workflow")) == {
        ("D1", workflow("wf1"), "write", w),
        ("D2", workflow("wf1"), "read", w),
        ("D1", job("mr1"), "write", m2),
        ("D9", job("mr1"), "read", m2),
    }


def test_nested_parents_roll_up_to_the_nearest_workflow(client: TestClient) -> None:
    """Airflow: a DAG run starts a TASK run, which starts a Spark application. The task is
    a leaf type, so the application's workflow run is the DAG run."""
    dag_run, task_run, app_run = rid(), rid(), rid()

    def job_type(kind: str) -> dict[str, Any]:
        return {"jobType": {"jobType": kind, "integration": "AIRFLOW", "processingType": "BATCH"}}

    post(
        client,
        run_event((NS, "etl"), run_id=dag_run, event_type="START", job_facets=job_type("DAG")),
        run_event(
            (NS, "etl.load"),
            run_id=task_run,
            job_facets=job_type("TASK"),
            parent=((NS, "etl"), dag_run),
        ),
        run("load_app", app_run, reads=["A"], writes=["B"], parent=((NS, "etl.load"), task_run)),
    )
    assert rels(lineage(client, "B", rollup="workflow")) == {
        ("B", workflow("etl"), "write", dag_run),
        ("A", workflow("etl"), "read", dag_run),
    }
    assert rels(lineage(client, "B")) == {
        ("B", job("load_app"), "write", app_run),
        ("A", job("load_app"), "read", app_run),
    }


# -- seed 002's EmpAgg: a temporary dataset inside the workflow run -------------------------

TEMPORARY_KINDS = ["name", "upper-case name", "facet", "lifecycle", "lifecycle in one run"]


def emp_agg(client: TestClient, kind: str) -> dict[str, str]:
    """EmployeePipe's run W: phase-1 reads Employee and writes a temporary dataset, phase-2
    reads it and writes EmpAgg; Reporter, in no workflow, reads EmpAgg."""
    ids = {"W": rid(), "p1": rid(), "p2": rid(), "rr": rid()}
    pipe = ((NS, "EmployeePipe"), ids["W"])
    suffixes = {"name": ids["W"], "upper-case name": ids["W"].upper()}
    tmp = f"conn-0.{suffixes[kind]}" if kind in suffixes else "conn-0"
    ids["tmp"] = tmp
    written: dict[str, Any] = {}
    dropped: list[dict[str, Any]] = []
    if kind == "facet":
        written = {"upstream_temporary": {"temporary": True}}
    if kind.startswith("lifecycle"):
        written = {"lifecycleStateChange": {"lifecycleStateChange": "CREATE"}}
        dropped = [ds(NS, tmp, lifecycleStateChange={"lifecycleStateChange": "DROP"})]
    # "lifecycle in one run": phase-1 reports CREATE on START and DROP on COMPLETE; both
    # states of its one relation count (design §3.3), not only the latest.
    one_run = kind == "lifecycle in one run"
    post(
        client,
        run_event((NS, "EmployeePipe"), run_id=ids["W"], event_type="START", time=BASE_TIME),
        run_event(
            (NS, "phase-1"),
            run_id=ids["p1"],
            event_type="START" if one_run else "COMPLETE",
            inputs=[ds(NS, "Employee")],
            outputs=[ds(NS, tmp, **written)],
            parent=pipe,
            time=BASE_TIME + hours(1),
        ),
        run_event(
            (NS, "phase-2"),
            run_id=ids["p2"],
            inputs=[ds(NS, tmp)],
            outputs=[ds(NS, "EmpAgg")],
            parent=pipe,
            time=BASE_TIME + hours(2),
        ),
        *(
            [
                run_event(
                    (NS, "phase-1"),
                    run_id=ids["p1"],
                    outputs=dropped,
                    parent=pipe,
                    time=BASE_TIME + hours(1.5),
                )
                if one_run
                else run_event((NS, "cleanup"), run_id=rid(), outputs=dropped, parent=pipe)
            ]
            if dropped
            else []
        ),
        run_event((NS, "EmployeePipe"), run_id=ids["W"], time=BASE_TIME + hours(3)),
        run("Reporter", ids["rr"], reads=["EmpAgg"], time=BASE_TIME + hours(4)),
    )
    return ids


def check_rolled_up(client: TestClient, ids: dict[str, str]) -> None:
    """Seed 002's query: the workflow stands where its programs stood."""
    body = lineage(
        client,
        "EmpAgg",
        levels=1,
        rollup="workflow",
        collapse=["access", "run", "component"],
    )
    pipe = workflow("EmployeePipe")
    assert body["relations"] == [
        {
            "data": "dataset.ns.EmpAgg",
            "program": "job.ns.Reporter",
            "accesses": ["read"],
            "runs": [ids["rr"]],
            "components": [],
        },
        {
            "data": "dataset.ns.EmpAgg",
            "program": pipe,
            "accesses": ["write"],
            "runs": [ids["W"]],
            "components": [],
        },
        {
            "data": "dataset.ns.Employee",
            "program": pipe,
            "accesses": ["read"],
            "runs": [ids["W"]],
            "components": [],
        },
    ]
    assert sorted(body["data"]) == ["dataset.ns.EmpAgg", "dataset.ns.Employee"]
    assert sorted(body["programs"]) == ["job.ns.Reporter", pipe]


def check_directed_rollup_passes_through(client: TestClient, ids: dict[str, str]) -> None:
    pipe = workflow("EmployeePipe")
    up = lineage(client, "EmpAgg", levels=1, rollup="workflow", direction="upstream")
    assert rels(up) == {("EmpAgg", pipe, "write", ids["W"]), ("Employee", pipe, "read", ids["W"])}
    down = lineage(client, "Employee", levels=1, rollup="workflow", direction="downstream")
    assert rels(down) == {("Employee", pipe, "read", ids["W"]), ("EmpAgg", pipe, "write", ids["W"])}
    down2 = lineage(client, "Employee", levels=2, rollup="workflow", direction="downstream")
    assert rels(down2) == rels(down) | {("EmpAgg", job("Reporter"), "read", ids["rr"])}


def check_marked_without_rollup(client: TestClient, ids: dict[str, str]) -> None:
    body = lineage(client, "EmpAgg", levels=1)
    assert rels(body) == {
        ("EmpAgg", job("phase-2"), "write", ids["p2"]),
        (ids["tmp"], job("phase-2"), "read", ids["p2"]),
        ("EmpAgg", job("Reporter"), "read", ids["rr"]),
    }
    assert body["data"][f"dataset.ns.{ids['tmp']}"] == {
        "entityId": {"type": "dataset", "namespace": NS, "name": ids["tmp"]},
        "temporary": True,
    }
    assert "temporary" not in body["data"]["dataset.ns.EmpAgg"]


@pytest.mark.parametrize("kind", TEMPORARY_KINDS)
def test_emp_agg(client: TestClient, kind: str) -> None:
    ids = emp_agg(client, kind)
    check_rolled_up(client, ids)
    check_directed_rollup_passes_through(client, ids)
    check_marked_without_rollup(client, ids)


def test_an_ordinary_intermediate_dataset_stays(client: TestClient) -> None:
    """Created but never dropped, not marked, no run-id suffix: not temporary."""
    w, p1, p2 = rid(), rid(), rid()
    pipe = ((NS, "Pipe"), w)
    post(
        client,
        run_event(
            (NS, "phase-1"),
            run_id=p1,
            inputs=[ds(NS, "Employee")],
            outputs=[ds(NS, "staging", lifecycleStateChange={"lifecycleStateChange": "CREATE"})],
            parent=pipe,
        ),
        run("phase-2", p2, reads=["staging"], writes=["EmpAgg"], parent=pipe),
    )
    body = lineage(client, "EmpAgg", rollup="workflow", collapse="access")
    assert {(r["data"], tuple(r["accesses"])) for r in body["relations"]} == {
        ("dataset.ns.EmpAgg", ("write",)),
        ("dataset.ns.staging", ("read", "write")),
        ("dataset.ns.Employee", ("read",)),
    }
    assert "temporary" not in lineage(client, "EmpAgg")["data"].get("dataset.ns.staging", {})


def test_a_name_ending_with_another_runs_id_is_not_temporary(client: TestClient) -> None:
    """CDAP's suffix must be the id of the workflow run the dataset is used in."""
    w, p1, p2, elsewhere = rid(), rid(), rid(), rid()
    pipe = ((NS, "Pipe"), w)
    staging = f"staging.{elsewhere}"
    post(
        client,
        run("phase-1", p1, reads=["Employee"], writes=[staging], parent=pipe),
        run("phase-2", p2, reads=[staging], writes=["EmpAgg"], parent=pipe),
    )
    body = lineage(client, "EmpAgg", levels=2)
    assert f"dataset.ns.{staging}" in body["data"]
    assert not any(entry.get("temporary") for entry in body["data"].values())


def test_a_temporary_dataset_asked_about_with_rollup(client: TestClient) -> None:
    """All its relations are inside the workflow run, so none is shown; it says why."""
    ids = emp_agg(client, "facet")
    body = lineage(client, ids["tmp"], rollup="workflow")
    assert body["relations"] == []
    assert body["programs"] == {}
    assert body["data"] == {
        "dataset.ns.conn-0": {
            "entityId": {"type": "dataset", "namespace": NS, "name": "conn-0"},
            "temporary": True,
        }
    }


def test_rollup_keeps_only_runs_in_the_window(client: TestClient) -> None:
    """A workflow run known only as a parent has no times; its runs are windowed one by
    one, so an old run inside it does not come back through the rollup."""
    w, recent, old = rid(), rid(), rid()
    wf = ((NS, "wf"), w)
    post(
        client,
        run("load", recent, reads=["A"], writes=["B"], parent=wf),
        run("backfill", old, reads=["Z"], writes=["A"], parent=wf, time=BASE_TIME - hours(24 * 10)),
    )
    assert rels(lineage(client, "B", rollup="workflow", levels=100)) == {
        ("B", workflow("wf"), "write", w),
        ("A", workflow("wf"), "read", w),
    }
    wide = lineage(client, "B", rollup="workflow", levels=100, start="0")
    assert rels(wide) == {
        ("B", workflow("wf"), "write", w),
        ("A", workflow("wf"), "read", w),
        ("A", workflow("wf"), "write", w),
        ("Z", workflow("wf"), "read", w),
    }


def test_a_new_child_run_makes_its_parents_job_a_workflow_at_the_next_read(
    client: TestClient,
) -> None:
    """A job becomes a workflow when another run names one of its runs as parent: its own
    row changes, none of its runs does. The next read, through the index the first one
    loaded, rolls up to it at once."""
    dag_run, task_run, step_run = rid(), rid(), rid()
    post(
        client,
        run_event(
            (NS, "nightly"),
            run_id=dag_run,
            event_type="START",
            job_facets={"jobType": {"jobType": "DAG", "processingType": "BATCH"}},
        ),
        run("task", task_run, writes=["X"], parent=((NS, "nightly"), dag_run)),
    )
    assert rels(lineage(client, "X", direction="upstream", rollup="workflow")) == {
        ("X", workflow("nightly"), "write", dag_run)
    }
    # `task` (no jobType) is now a parent: a workflow, nearer than the DAG for both runs.
    step = run("step", step_run, reads=["X"], writes=["Y"], parent=((NS, "task"), task_run))
    post(client, step)
    assert rels(lineage(client, "Y", direction="upstream", rollup="workflow")) == {
        ("X", workflow("task"), "write", task_run),
        ("X", workflow("task"), "read", task_run),
        ("Y", workflow("task"), "write", task_run),
    }
    assert rels(lineage(client, "X", direction="upstream", rollup="workflow")) == {
        ("X", workflow("task"), "write", task_run)
    }


def test_a_workflow_run_known_only_as_parent_is_listed_after_started_ones(
    client: TestClient,
) -> None:
    """Collapsed by run, a relation lists its runs newest first and runs without a start
    last: a workflow run no event of its own started has none, whatever its id."""
    unstarted, started = (
        "00000000-0000-4000-8000-000000000001",
        "ffffffff-ffff-4fff-8fff-ffffffffffff",
    )
    post(
        client,
        run_event((NS, "nightly"), run_id=started, event_type="START", time=BASE_TIME),
        run("load", rid(), writes=["D"], parent=((NS, "nightly"), unstarted)),
        run("load", rid(), writes=["D"], parent=((NS, "nightly"), started)),
    )
    body = lineage(client, "D", rollup="workflow", collapse="run")
    assert [(r["program"], r["runs"]) for r in body["relations"]] == [
        (workflow("nightly"), [started, unstarted])
    ]
