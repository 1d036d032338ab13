"""Job-centred lineage and workflow contents (`/v3/namespaces/{ns}/jobs/{job}/lineage` and
`/contents`): the dataset-lineage parameters around a job, on both stores.

The chain of every test, each job in its own run:

    A → extract → B → transform → C → load → D
                  B → audit
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, hours, run_event
from tests.query.test_dataset_lineage import NS, WINDOW, job, post, rels, rid, run, workflow
from upstream.api.app import create_app
from upstream.query.graph_index.index import graph_of
from upstream.query.job_lineage import job_lineage
from upstream.query.lineage_params import LineageParams
from upstream.settings import Settings
from upstream.store.engine import Store


def get(client: TestClient, name: str, what: str = "lineage", **params: Any) -> Any:
    """`…/jobs/{name}/{what}` of namespace `ns` (another with `namespace=`)."""
    namespace = quote(params.pop("namespace", NS), safe="")
    path = f"/v3/namespaces/{namespace}/jobs/{quote(name, safe='')}/{what}"
    return client.get(path, params={**WINDOW, **params})


def answer(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def lineage(client: TestClient, name: str, **params: Any) -> dict[str, Any]:
    return answer(get(client, name, **params))


def contents(client: TestClient, name: str, **params: Any) -> dict[str, Any]:
    return answer(get(client, name, "contents", **params))


@pytest.fixture
def chain(client: TestClient) -> dict[str, str]:
    runs = {name: rid() for name in ("extract", "transform", "load", "audit")}
    post(
        client,
        run("extract", runs["extract"], reads=["A"], writes=["B"]),
        run("transform", runs["transform"], reads=["B"], writes=["C"]),
        run("load", runs["load"], reads=["C"], writes=["D"]),
        run("audit", runs["audit"], reads=["B"]),
    )
    return runs


def test_upstream_is_the_jobs_reads_and_what_made_them(
    client: TestClient, chain: dict[str, str]
) -> None:
    assert rels(lineage(client, "transform", direction="upstream", levels=1)) == {
        ("B", job("transform"), "read", chain["transform"]),
        ("B", job("extract"), "write", chain["extract"]),
        ("A", job("extract"), "read", chain["extract"]),
    }


def test_downstream_is_the_jobs_writes_and_what_used_them(
    client: TestClient, chain: dict[str, str]
) -> None:
    body = lineage(client, "transform", direction="downstream", levels=1)
    assert rels(body) == {
        ("C", job("transform"), "write", chain["transform"]),
        ("C", job("load"), "read", chain["load"]),
        ("D", job("load"), "write", chain["load"]),
    }
    assert sorted(body["data"]) == ["dataset.ns.C", "dataset.ns.D"]
    assert sorted(body["programs"]) == ["job.ns.load", "job.ns.transform"]
    assert body["programs"]["job.ns.load"] == {
        "entityId": {"type": "job", "namespace": NS, "name": "load"}
    }


def test_both_is_the_dataset_lineage_of_every_dataset_of_the_job(
    client: TestClient, chain: dict[str, str]
) -> None:
    # One level from B reaches extract, transform and audit and all their datasets; one
    # from C reaches transform and load and theirs.
    assert rels(lineage(client, "transform", levels=1)) == {
        ("A", job("extract"), "read", chain["extract"]),
        ("B", job("extract"), "write", chain["extract"]),
        ("B", job("transform"), "read", chain["transform"]),
        ("C", job("transform"), "write", chain["transform"]),
        ("B", job("audit"), "read", chain["audit"]),
        ("C", job("load"), "read", chain["load"]),
        ("D", job("load"), "write", chain["load"]),
    }


def test_levels_walk_on_from_the_jobs_datasets(client: TestClient, chain: dict[str, str]) -> None:
    one = rels(lineage(client, "load", direction="upstream", levels=1))
    assert one == {
        ("C", job("load"), "read", chain["load"]),
        ("C", job("transform"), "write", chain["transform"]),
        ("B", job("transform"), "read", chain["transform"]),
    }
    assert rels(lineage(client, "load", direction="upstream", levels=2)) == one | {
        ("B", job("extract"), "write", chain["extract"]),
        ("A", job("extract"), "read", chain["extract"]),
    }


def test_collapse_and_window_apply_as_for_datasets(client: TestClient) -> None:
    old, new, reader = rid(), rid(), rid()
    post(
        client,
        run("daily", old, reads=["S"], writes=["T"]),
        run_event(
            (NS, "daily"),
            run_id=new,
            time=BASE_TIME + hours(2),
            inputs=[{"namespace": NS, "name": "S"}],
            outputs=[{"namespace": NS, "name": "T"}],
        ),
        run("report", reader, reads=["T"]),
    )
    collapsed = lineage(client, "daily", direction="downstream", collapse=["run", "access"])
    assert collapsed["relations"] == [
        {
            "data": "dataset.ns.T",
            "program": "job.ns.daily",
            "accesses": ["write"],
            "runs": [new, old],  # newest first
            "components": [],
        },
        {
            "data": "dataset.ns.T",
            "program": "job.ns.report",
            "accesses": ["read"],
            "runs": [reader],
            "components": [],
        },
    ]
    # A window holding only the newer run of daily: the reader ran before it.
    later = {"start": (BASE_TIME + hours(1)).isoformat(), "end": (BASE_TIME + hours(3)).isoformat()}
    assert rels(lineage(client, "daily", direction="downstream", **later)) == {
        ("T", job("daily"), "write", new)
    }
    # Nothing of the job in the window: an empty answer, not an error.
    empty = lineage(client, "daily", start="now-1h", end="now")
    assert (empty["relations"], empty["data"], empty["programs"]) == ([], {}, {})


def test_rollup_makes_the_job_its_workflow(client: TestClient) -> None:
    w, e, t_, a = rid(), rid(), rid(), rid()
    inside = ((NS, "nightly"), w)
    post(
        client,
        run("extract", e, reads=["A"], writes=["B"], parent=inside),
        run("transform", t_, reads=["B"], writes=["C"], parent=inside),
        run("audit", a, reads=["B"]),
    )
    rolled = lineage(client, "transform", direction="upstream", levels=1, rollup="workflow")
    # The workflow stands for transform: its reads and writes of B are the centre's, and what
    # flowed into B (A, through extract's run inside the workflow run) is the workflow's read.
    assert rels(rolled) == {
        ("B", workflow("nightly"), "read", w),
        ("B", workflow("nightly"), "write", w),
        ("A", workflow("nightly"), "read", w),
    }
    assert rels(lineage(client, "transform", direction="upstream", levels=1)) == {
        ("B", job("transform"), "read", t_),
        ("B", job("extract"), "write", e),
        ("A", job("extract"), "read", e),
    }


def test_unknown_job_or_namespace_is_404_and_bad_levels_400(
    client: TestClient, chain: dict[str, str]
) -> None:
    missing = get(client, "nothing")
    assert missing.status_code == 404
    assert missing.json()["message"] == "job 'nothing' not found in namespace 'ns'"
    assert get(client, "load", namespace="elsewhere").status_code == 404
    for name, value in (("levels", "0"), ("direction", "sideways"), ("collapse", "time")):
        bad = get(client, "load", **{name: value})
        assert bad.status_code == 400
        assert name in bad.json()["message"]


def test_a_cut_answer_keeps_the_jobs_own_relations(db_url: str) -> None:
    settings = Settings(db_url=db_url, max_lineage_nodes=3)
    with TestClient(create_app(settings, migrate=False)) as small:
        runs = {name: rid() for name in ("extract", "transform")}
        post(
            small,
            run("extract", runs["extract"], reads=["A"], writes=["B"]),
            run("transform", runs["transform"], reads=["B"], writes=["C"]),
        )
        body = lineage(small, "transform", direction="upstream", levels=5)
    assert body["truncated"] is True
    assert ("B", job("transform"), "read", runs["transform"]) in rels(body)
    assert len(set(body["data"]) | set(body["programs"])) <= 3


def test_workflow_contents_list_its_runs_and_jobs(client: TestClient) -> None:
    first, second = rid(), rid()
    e1, t1, e2 = rid(), rid(), rid()
    post(
        client,
        run_event((NS, "nightly"), run_id=first, event_type="START", time=BASE_TIME),
        run("extract", e1, reads=["A"], writes=["B"], parent=((NS, "nightly"), first)),
        run("transform", t1, reads=["B"], writes=["C"], parent=((NS, "nightly"), first)),
        run_event((NS, "nightly"), run_id=second, event_type="START", time=BASE_TIME + hours(2)),
        run_event(
            (NS, "extract"),
            run_id=e2,
            time=BASE_TIME + hours(2),
            parent=((NS, "nightly"), second),
        ),
        run("outside", rid(), reads=["C"]),
    )
    body = contents(client, "nightly")
    assert body["isWorkflow"] is True
    assert [r["id"] for r in body["runs"]] == [second, first]  # newest first
    assert [r["id"] for r in body["runs"][0]["jobRuns"]] == [e2]
    assert sorted(r["job"]["name"] for r in body["runs"][1]["jobRuns"]) == ["extract", "transform"]
    assert [(j["name"], j["runs"], j["latestRun"]["id"]) for j in body["jobs"]] == [
        ("extract", 2, e2),
        ("transform", 1, t1),
    ]
    assert body["runs"][1]["jobRuns"][0]["state"] == "COMPLETED"
    # A window before the second run holds only the first.
    early = contents(client, "nightly", end=(BASE_TIME + hours(1)).isoformat())
    assert [r["id"] for r in early["runs"]] == [first]
    # A job that is no workflow contains nothing.
    plain = contents(client, "outside")
    assert (plain["isWorkflow"], plain["runs"], plain["jobs"]) == (False, [], [])
    assert get(client, "ghost", "contents").status_code == 404
    bad = get(client, "nightly", "contents", start="soon")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["path"] == "start"


def test_a_workflows_graph_shows_its_jobs_or_rolls_them_up(client: TestClient) -> None:
    w, e, t_ = rid(), rid(), rid()
    inside = ((NS, "nightly"), w)
    post(
        client,
        run_event((NS, "nightly"), run_id=w, event_type="START", time=BASE_TIME),
        run("extract", e, reads=["A"], writes=["B"], parent=inside),
        run("transform", t_, reads=["B"], writes=["C"], parent=inside),
    )
    assert rels(lineage(client, "nightly", levels=1)) == {
        ("A", job("extract"), "read", e),
        ("B", job("extract"), "write", e),
        ("B", job("transform"), "read", t_),
        ("C", job("transform"), "write", t_),
    }
    assert rels(lineage(client, "nightly", levels=1, rollup="workflow")) == {
        ("A", workflow("nightly"), "read", w),
        ("B", workflow("nightly"), "write", w),
        ("B", workflow("nightly"), "read", w),
        ("C", workflow("nightly"), "write", w),
    }
    # Downstream from the workflow: what its jobs wrote, B and C, and their readers.
    assert rels(lineage(client, "nightly", levels=1, direction="downstream")) == {
        ("B", job("extract"), "write", e),
        ("C", job("transform"), "write", t_),
        ("B", job("transform"), "read", t_),
    }


def test_collapsed_runs_are_ordered_by_the_indexs_starts(
    client: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """`daily` ran at 12:00 and at 14:00: collapsed by run, the later run is listed first,
    ordered by the starts the index holds, without reading the runs by id from SQL."""
    old, new = rid(), rid()
    post(
        client,
        run("daily", old, reads=["S"], writes=["T"]),
        run("daily", new, reads=["S"], writes=["T"], time=BASE_TIME + hours(2)),
    )
    store, found = statements
    with store.read() as conn:
        graph_of(conn)
    found.clear()
    params = LineageParams(
        start=BASE_TIME - hours(24),
        end=BASE_TIME + hours(24),
        direction="downstream",
        collapse=frozenset({"run"}),
    )
    with store.read() as conn:
        answer = job_lineage(conn, NS, "daily", params, max_nodes=100, max_relations=1000)
    assert [(r["data"], r["accesses"], r["runs"]) for r in answer["relations"]] == [
        ("dataset.ns.T", ["write"], [new, old])
    ]
    assert [s for s in found if re.search(r"FROM runs\s+WHERE runs\.id\b", s)] == []
