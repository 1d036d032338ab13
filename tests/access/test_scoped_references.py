"""What an answer a scoped token may read says about things it may not see, besides the
nodes of a walk (design §5): an alias reaching into a hidden namespace, the workflow a job
ran in, the time of a hidden job's run. Each answer is worked out by hand on the estate of
`estate.py`, with a full reader's answer beside it to show the fact is there to hide."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
    ADMIN,
    FIN_DS,
    FIN_JOBS,
    HR,
    READ_ALL,
    RUNS,
    WRITE_ALL,
    bearer,
    issue,
    symlinks,
)
from tests.builders import BASE_TIME, ds, hours, iso, run_event
from upstream.client.http import segment

F, FJ = segment(FIN_DS), segment(FIN_JOBS)
#: The hr workflow the finance `costs` run ran inside.
WORKFLOW_RUN = "00000000-0000-4000-8000-0000000000f0"


def post(client: TestClient, *events: dict[str, Any]) -> None:
    response = client.post("/api/v1/lineage", json=list(events), headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text


@pytest.fixture
def aliased(estate: TestClient) -> TestClient:
    """hr's salaries say they are also finance's `salaries_view`: an alias in a namespace a
    finance reader may see, of a dataset it may not."""
    output = ds(HR, "salaries", symlinks=symlinks(FIN_DS, "salaries_view"))
    post(estate, run_event((HR, "payroll"), run_id=RUNS["payroll"], outputs=[output]))
    return estate


@pytest.mark.parametrize("tail", ["", "/versions"])
def test_an_alias_of_a_hidden_dataset_reads_as_a_missing_dataset(
    aliased: TestClient, tail: str
) -> None:
    finance = issue(aliased, "read:finance/*")["token"]
    path = f"/api/v1/namespaces/{F}/datasets/{{}}{tail}"
    full = aliased.get(path.format("salaries_view"), headers=bearer(READ_ALL))
    assert full.status_code == 200
    assert "salaries" in full.text
    hidden = aliased.get(path.format("salaries_view"), headers=bearer(finance))
    missing = aliased.get(path.format("no_such"), headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries_view")
    assert b"hr" not in hidden.content


def test_an_alias_of_a_hidden_dataset_has_no_lineage(aliased: TestClient) -> None:
    finance = issue(aliased, "read:finance/*")["token"]
    path = f"/v3/namespaces/{F}/datasets/{{}}/lineage"
    params = {"start": "0", "end": "now"}
    hidden = aliased.get(path.format("salaries_view"), params=params, headers=bearer(finance))
    missing = aliased.get(path.format("no_such"), params=params, headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries_view")


@pytest.fixture
def in_hr_workflow(estate: TestClient) -> TestClient:
    """The finance `costs` run ran inside a run of hr's `month_end` workflow."""
    post(
        estate,
        run_event((HR, "month_end"), run_id=WORKFLOW_RUN, event_type="START"),
        run_event(
            (FIN_JOBS, "costs"), run_id=RUNS["costs"], parent=((HR, "month_end"), WORKFLOW_RUN)
        ),
    )
    return estate


@pytest.mark.parametrize("path", [f"/api/v1/namespaces/{FJ}/jobs/costs", "/api/v1/jobs"])
def test_a_hidden_parent_job_is_named_as_no_parent(in_hr_workflow: TestClient, path: str) -> None:
    def costs(token: str) -> dict[str, Any]:
        response = in_hr_workflow.get(path, headers=bearer(token))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        jobs = document.get("jobs", [document])
        return next(job for job in jobs if job["name"] == "costs")

    full = costs(READ_ALL)
    assert full["parentJobName"] == "month_end"
    assert full["parentJobUuid"] is not None
    finance = costs(issue(in_hr_workflow, "read:finance/*")["token"])
    assert (finance["parentJobName"], finance["parentJobUuid"]) == (None, None)
    assert "month_end" not in repr(finance)
    both = costs(issue(in_hr_workflow, "read:finance/*", "read:hr", name="both")["token"])
    assert both["parentJobName"] == "month_end"


def test_the_latest_run_outside_the_window_counts_only_visible_jobs(estate: TestClient) -> None:
    """hr's `audit` read finance's orders five hours after the estate's runs; in a window
    after both, a full reader is pointed at the audit, a finance reader at build_invoices."""
    post(
        estate,
        run_event((HR, "audit"), time=BASE_TIME + hours(5), inputs=[ds(FIN_DS, "orders")]),
    )
    window = {"start": iso(BASE_TIME + hours(6)), "end": iso(BASE_TIME + hours(7))}
    path = f"/v3/namespaces/{F}/datasets/orders/lineage"
    full = estate.get(path, params=window, headers=bearer(READ_ALL)).json()
    assert full["relations"] == []
    assert full["latestRunOutsideWindow"] == (BASE_TIME + hours(5)).isoformat()
    finance = issue(estate, "read:finance/*")["token"]
    scoped = estate.get(path, params=window, headers=bearer(finance)).json()
    assert scoped["relations"] == []
    assert scoped["latestRunOutsideWindow"] == BASE_TIME.isoformat()


def test_a_run_names_no_hidden_parent_run(in_hr_workflow: TestClient) -> None:
    path = f"/api/v1/namespaces/{FJ}/jobs/costs/runs"

    def costs_run(token: str) -> dict[str, Any]:
        response = in_hr_workflow.get(path, headers=bearer(token))
        assert response.status_code == 200, response.text
        run: dict[str, Any] = response.json()["runs"][0]
        return run

    full = costs_run(READ_ALL)
    assert full["parentRunId"] == WORKFLOW_RUN
    assert full["facets"]["parent"]["job"]["name"] == "month_end"
    finance = costs_run(issue(in_hr_workflow, "read:finance/*")["token"])
    assert finance["parentRunId"] is None
    assert "parent" not in finance["facets"]
    assert WORKFLOW_RUN not in repr(finance)
    assert "month_end" not in repr(finance)


FINANCE_WORKFLOW_RUN = "00000000-0000-4000-8000-0000000000f1"


@pytest.fixture
def month_close(estate: TestClient) -> TestClient:
    """Finance's `month_close` workflow ran finance's costs and hr's payroll inside it."""
    workflow = ((FIN_JOBS, "month_close"), FINANCE_WORKFLOW_RUN)
    post(
        estate,
        run_event((FIN_JOBS, "month_close"), run_id=FINANCE_WORKFLOW_RUN, event_type="START"),
        run_event((FIN_JOBS, "costs"), run_id=RUNS["costs"], parent=workflow),
        run_event((HR, "payroll"), run_id=RUNS["payroll"], parent=workflow),
    )
    return estate


def _contents(client: TestClient, token: str, path: str) -> Any:
    return client.get(path, params={"start": "0", "end": "now"}, headers=bearer(token))


def test_workflow_contents_show_only_the_runs_of_shown_jobs(month_close: TestClient) -> None:
    path = f"/v3/namespaces/{FJ}/jobs/month_close/contents"
    full = _contents(month_close, READ_ALL, path).json()
    assert [j["name"] for j in full["jobs"]] == ["costs", "payroll"]
    assert "hiddenNodes" not in full
    finance = issue(month_close, "read:finance/*")["token"]
    answer = _contents(month_close, finance, path)
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert [r["id"] for r in document["runs"]] == [FINANCE_WORKFLOW_RUN]
    assert [(r["id"], r["job"]["name"]) for r in document["runs"][0]["jobRuns"]] == [
        (RUNS["costs"], "costs")
    ]
    assert [(j["name"], j["runs"]) for j in document["jobs"]] == [("costs", 1)]
    assert (document["hiddenNodes"], document["hiddenRelations"]) == (1, 1)
    assert "payroll" not in answer.text
    assert RUNS["payroll"] not in answer.text


def test_a_hidden_workflow_is_404_like_a_missing_one(month_close: TestClient) -> None:
    hr = issue(month_close, "read:hr")["token"]
    hidden = _contents(month_close, hr, f"/v3/namespaces/{FJ}/jobs/month_close/contents")
    missing = _contents(month_close, ADMIN, "/v3/namespaces/nowhere/jobs/month_close/contents")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"nowhere", FIN_JOBS.encode())
