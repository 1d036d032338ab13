"""Raw events, the dashboard's counts, Marquez's advanced search and runs by id, filtered by
the token's namespaces (design §5), on the estate of `estate.py` plus:

    finance/airflow:load_orders wrote finance/warehouse:orders          (finance only)
    finance/airflow:report read invoices, inside a run of hr's month_end (names hr)

An event comes back verbatim or not at all: a reader sees one whose job, datasets, parent
job and every other reference are all in its namespaces (`test_scoped_facets.py` for the
references facets make). Of the estate's five events a finance reader sees none (each
names crm or hr), an hr reader only payroll's, a reader of finance and hr payroll's and
costs'."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
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
from tests.builders import BASE_TIME, ds, hours, run_event
from upstream.api.deps import current_time
from upstream.client.http import segment

LOAD_RUN = "00000000-0000-4000-8000-0000000000a1"
REPORT_RUN = "00000000-0000-4000-8000-0000000000a2"
MONTH_END_RUN = "00000000-0000-4000-8000-0000000000a3"
MISSING_RUN = "00000000-0000-4000-8000-0000000000ff"


def extra_events() -> list[dict[str, Any]]:
    return [
        run_event(
            (FIN_JOBS, "load_orders"),
            run_id=LOAD_RUN,
            time=BASE_TIME + hours(1),
            outputs=[ds(FIN_DS, "orders")],
        ),
        run_event(
            (FIN_JOBS, "report"),
            run_id=REPORT_RUN,
            time=BASE_TIME + hours(2),
            inputs=[ds(FIN_DS, "invoices")],
            parent=((HR, "month_end"), MONTH_END_RUN),
        ),
    ]


@pytest.fixture
def events(estate: TestClient) -> Iterator[TestClient]:
    """The estate with the two events above, the clock three hours after the estate's."""
    response = estate.post("/api/v1/lineage", json=extra_events(), headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text
    app: Any = estate.app
    app.dependency_overrides[current_time] = lambda: BASE_TIME + hours(3)
    yield estate
    app.dependency_overrides.clear()


def get(client: TestClient, path: str, token: str, **params: str) -> Any:
    response = client.get(path, params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def run_ids(listed: list[dict[str, Any]]) -> list[str]:
    return [event["run"]["runId"] for event in listed]


def test_a_scoped_reader_is_listed_only_events_naming_nothing_hidden(events: TestClient) -> None:
    finance = issue(events, "read:finance/*")["token"]
    answer = get(events, "/api/v1/events/lineage", finance)
    assert run_ids(answer["events"]) == [LOAD_RUN]
    assert answer["totalCount"] == 1
    # Verbatim: the bytes of the event as the full reader gets it.
    full = get(events, "/api/v1/events/lineage", READ_ALL)
    assert answer["events"][0] == next(e for e in full["events"] if e["run"]["runId"] == LOAD_RUN)
    assert full["totalCount"] == 7
    hr = get(events, "/api/v1/events/lineage", issue(events, "read:hr", name="hr")["token"])
    assert run_ids(hr["events"]) == [RUNS["payroll"]]
    both = issue(events, "read:finance/*", "read:hr", name="both")["token"]
    wider = get(events, "/api/v1/events/lineage", both, sortDirection="asc")
    # The estate's events share one time; arrival orders them: payroll, then costs.
    assert run_ids(wider["events"]) == [RUNS["payroll"], RUNS["costs"], LOAD_RUN, REPORT_RUN]
    assert wider["totalCount"] == 4


def test_a_parent_or_root_job_in_a_hidden_namespace_hides_the_event(events: TestClient) -> None:
    """report's own job and dataset are finance's; its parent is hr's month_end. subreport
    ran inside finance's report, whose root is hr's month_end."""
    subreport = run_event((FIN_JOBS, "subreport"), parent=((FIN_JOBS, "report"), REPORT_RUN))
    subreport["run"]["facets"]["parent"]["root"] = {
        "run": {"runId": MONTH_END_RUN},
        "job": {"namespace": HR, "name": "month_end"},
    }
    posted = events.post("/api/v1/lineage", json=[subreport], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(events, "read:finance/*")["token"]
    listed = get(events, "/api/v1/events", finance)["events"]
    assert run_ids(listed) == [LOAD_RUN]
    assert "month_end" not in repr(listed)
    both = issue(events, "read:finance/*", "read:hr", name="both")["token"]
    shown = run_ids(get(events, "/api/v1/events", both)["events"])
    assert {REPORT_RUN, subreport["run"]["runId"]} <= set(shown)


def test_the_events_of_a_namespace_are_those_the_reader_may_see(events: TestClient) -> None:
    """finance/warehouse is named by build_invoices, costs, churn, load_orders and report; a
    finance reader sees load_orders only; an unreadable namespace is missing like one
    never stored."""
    finance = issue(events, "read:finance/*")["token"]
    path = f"/api/v1/events/{segment(FIN_DS)}"
    assert run_ids(get(events, path, finance)["events"]) == [LOAD_RUN]
    assert len(get(events, path, READ_ALL)["events"]) == 5
    hidden = events.get(f"/api/v1/events/{HR}", headers=bearer(finance))
    missing = events.get("/api/v1/events/nowhere", headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"nowhere", HR.encode())


def test_the_dashboard_counts_what_the_reader_may_see(events: TestClient) -> None:
    """In the last 24 hours (the clock at three hours after the estate's events): a finance
    reader's only event is load_orders' COMPLETE, its jobs build_invoices, costs,
    load_orders and report, its datasets orders, invoices and costs, one source per
    namespace (finance/warehouse)."""
    finance = issue(events, "read:finance/*")["token"]

    def last(path: str, token: str) -> dict[str, Any]:
        answer: dict[str, Any] = get(events, path, token, period="DAY")[-1]
        return answer

    counts = get(events, "/api/v1/stats/lineage-events", finance, period="DAY")
    assert sum(c["complete"] for c in counts) == 1
    assert (
        sum(
            c["complete"]
            for c in get(events, "/api/v1/stats/lineage-events", READ_ALL, period="DAY")
        )
        == 7
    )
    assert last("/api/v1/stats/jobs", finance)["count"] == 4
    assert last("/api/v1/stats/jobs", READ_ALL)["count"] == 7
    assert last("/api/v1/stats/datasets", finance)["count"] == 3
    assert last("/api/v1/stats/datasets", READ_ALL)["count"] == 8
    assert last("/api/v1/stats/sources", finance)["count"] == 1
    assert last("/api/v1/stats/sources", READ_ALL)["count"] == 3


def test_the_advanced_search_finds_only_readable_names(events: TestClient) -> None:
    """`o` is in orders, invoices, costs, raw_customers, customers, employees, churn_scores
    (datasets) and build_invoices, costs, payroll, load_orders, report, month_end (jobs)."""
    finance = issue(events, "read:finance/*")["token"]
    datasets = get(events, "/api/v2beta/search/datasets", finance, q="o")["hits"]
    assert [(h["namespace"], h["name"]) for h in datasets] == [
        (FIN_DS, "costs"),
        (FIN_DS, "invoices"),
        (FIN_DS, "orders"),
    ]
    jobs = get(events, "/api/v2beta/search/jobs", finance, q="o")["hits"]
    assert [(h["namespace"], h["name"]) for h in jobs] == [
        (FIN_JOBS, "build_invoices"),
        (FIN_JOBS, "costs"),
        (FIN_JOBS, "load_orders"),
        (FIN_JOBS, "report"),
    ]
    full = get(events, "/api/v2beta/search/jobs", READ_ALL, q="o")["hits"]
    assert {h["name"] for h in full} == {
        "build_invoices",
        "costs",
        "load_orders",
        "report",
        "payroll",
        "month_end",
    }
    assert len(get(events, "/api/v2beta/search/datasets", READ_ALL, q="o")["hits"]) == 7


def test_a_hit_names_the_latest_run_the_reader_may_see(events: TestClient) -> None:
    """hr's audit read orders after every other run: the full reader is pointed at it, a
    finance reader at load_orders' run (the latest finance run to touch orders)."""
    audit = run_event((HR, "audit"), time=BASE_TIME + hours(2), inputs=[ds(FIN_DS, "orders")])
    posted = events.post("/api/v1/lineage", json=[audit], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(events, "read:finance/*")["token"]
    [hit] = get(events, "/api/v2beta/search/datasets", finance, q="orders")["hits"]
    assert hit["run_id"] == LOAD_RUN
    [full] = get(events, "/api/v2beta/search/datasets", READ_ALL, q="orders")["hits"]
    assert full["run_id"] == audit["run"]["runId"]


def test_a_hit_names_nothing_hidden_in_its_facets(events: TestClient) -> None:
    """hr's salaries say they are also finance's salaries_view: an hr reader's hit keeps
    the facet without the alias."""
    output = ds(HR, "salaries", symlinks=symlinks(FIN_DS, "salaries_view"))
    event = run_event((HR, "payroll"), run_id=RUNS["payroll"], outputs=[output])
    assert (
        events.post("/api/v1/lineage", json=[event], headers=bearer(WRITE_ALL)).status_code == 201
    )
    hr = issue(events, "read:hr")["token"]
    [hit] = get(events, "/api/v2beta/search/datasets", hr, q="salaries")["hits"]
    assert hit["facets"]["symlinks"]["identifiers"] == []
    [full] = get(events, "/api/v2beta/search/datasets", READ_ALL, q="salaries")["hits"]
    assert full["facets"]["symlinks"]["identifiers"][0]["namespace"] == FIN_DS


@pytest.mark.parametrize("tail", ["", "/facets"])
def test_a_run_of_a_hidden_job_is_404_like_a_missing_run(events: TestClient, tail: str) -> None:
    finance = issue(events, "read:finance/*")["token"]
    hidden = events.get(f"/api/v1/jobs/runs/{RUNS['payroll']}{tail}", headers=bearer(finance))
    missing = events.get(f"/api/v1/jobs/runs/{MISSING_RUN}{tail}", headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(MISSING_RUN.encode(), RUNS["payroll"].encode())
    path = f"/api/v1/jobs/runs/{RUNS['payroll']}{tail}"
    assert events.get(path, headers=bearer(READ_ALL)).status_code == 200


def test_a_shown_run_names_nothing_hidden(events: TestClient) -> None:
    """costs read hr's salaries and finance's invoices; report ran inside hr's month_end."""
    finance = issue(events, "read:finance/*")["token"]
    costs = get(events, f"/api/v1/jobs/runs/{RUNS['costs']}", finance)
    assert [v["datasetVersionId"]["name"] for v in costs["inputDatasetVersions"]] == ["invoices"]
    full = get(events, f"/api/v1/jobs/runs/{RUNS['costs']}", READ_ALL)
    assert len(full["inputDatasetVersions"]) == 2
    report = get(events, f"/api/v1/jobs/runs/{REPORT_RUN}", finance)
    assert report["parentRunId"] is None
    assert "parent" not in report["facets"]
    assert "month_end" not in repr(report)
    assert get(events, f"/api/v1/jobs/runs/{REPORT_RUN}", READ_ALL)["parentRunId"] == MONTH_END_RUN
    facets = get(events, f"/api/v1/jobs/runs/{REPORT_RUN}/facets", finance)
    assert facets == {"runId": REPORT_RUN, "facets": {}}
    full_facets = get(events, f"/api/v1/jobs/runs/{REPORT_RUN}/facets", READ_ALL)
    assert full_facets["facets"]["parent"]["job"]["name"] == "month_end"


def test_a_dataset_counts_from_the_first_run_the_reader_may_see(events: TestClient) -> None:
    """hr's audit read finance's ledger at 10:00, two hours before the estate's events;
    finance's reconcile wrote it at 13:00. A finance reader counts the ledger (and its
    source) from 13:00 (orders, invoices and costs from 12:00); the full reader from 10:00."""
    audit = run_event((HR, "audit"), time=BASE_TIME - hours(2), inputs=[ds(FIN_DS, "ledger")])
    reconcile = run_event(
        (FIN_JOBS, "reconcile"), time=BASE_TIME + hours(1), outputs=[ds(FIN_DS, "ledger")]
    )
    posted = events.post("/api/v1/lineage", json=[audit, reconcile], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(events, "read:finance/*")["token"]

    def hourly(asset: str, token: str) -> dict[int, int]:
        """The counts of the intervals starting at 10:00 to 13:00, by hour."""
        counts = get(events, f"/api/v1/stats/{asset}", token, period="DAY")
        return {
            hour: c["count"]
            for c in counts
            for hour in range(10, 14)
            if c["startInterval"].startswith(f"2026-11-01T{hour}:00")
        }

    assert hourly("datasets", finance) == {10: 0, 11: 0, 12: 3, 13: 4}
    assert hourly("sources", finance) == {10: 0, 11: 0, 12: 1, 13: 1}
    assert hourly("datasets", READ_ALL) == {10: 1, 11: 1, 12: 9, 13: 9}
