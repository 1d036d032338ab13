"""Reads filtered by the token's namespaces (design §5), on the estate of `estate.py`, each
answer worked out by hand: nothing hidden is shown or walked through, the answer counts what
it stopped at, and a hidden dataset or job reads exactly like a missing one."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
    ADMIN,
    CRM,
    FIN_DS,
    FIN_JOBS,
    HR,
    READ_ALL,
    RUNS,
    WINDOW,
    WRITE_ALL,
    bearer,
    dataset_key,
    issue,
    job_key,
    shown,
)
from tests.builders import run_event
from upstream.client.http import segment

F, FJ = segment(FIN_DS), segment(FIN_JOBS)
INVOICES, COSTS = dataset_key(FIN_DS, "invoices"), dataset_key(FIN_DS, "costs")
ORDERS, SALARIES = dataset_key(FIN_DS, "orders"), dataset_key(HR, "salaries")
EMPLOYEES = dataset_key(HR, "employees")
BUILD, COSTS_JOB = job_key(FIN_JOBS, "build_invoices"), job_key(FIN_JOBS, "costs")
PAYROLL = job_key(HR, "payroll")
#: What a reader of finance sees around the invoices: the finance jobs and datasets only.
FINANCE_RELATIONS = {
    (INVOICES, BUILD, "write"),
    (ORDERS, BUILD, "read"),
    (INVOICES, COSTS_JOB, "read"),
    (COSTS, COSTS_JOB, "write"),
}


def lineage(client: TestClient, token: str, path: str, **params: str) -> dict[str, Any]:
    response = client.get(path, params={**WINDOW, **params}, headers=bearer(token))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def names_in(answer: object) -> str:
    return repr(answer)


def test_dataset_lineage_both_ways_shows_finance_only_and_counts_what_it_hid(
    estate: TestClient,
) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = lineage(estate, finance, f"/v3/namespaces/{F}/datasets/invoices/lineage")
    assert shown(answer) == FINANCE_RELATIONS
    assert set(answer["data"]) == {INVOICES, ORDERS, COSTS}
    assert set(answer["programs"]) == {BUILD, COSTS_JOB}
    # Stopped at: crm:customers and hr:salaries (read by finance jobs), crm:churn (reads costs).
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (3, 3)
    assert "crm" not in names_in(answer)
    assert "hr" not in names_in(answer).replace("hiddenRelations", "")


def test_a_diff_compares_what_the_reader_sees_and_says_what_each_side_hid(
    estate: TestClient,
) -> None:
    """From an empty window to all time: every relation the finance reader's lineage shows is
    added, nothing of crm or hr is named, and the later side hid what that lineage hides."""
    finance = issue(estate, "read:finance/*")["token"]
    path = f"/v3/namespaces/{F}/datasets/invoices/lineage/diff"
    asked = {"from": "0..1", "to": "0..now"}
    answer = estate.get(path, params=asked, headers=bearer(finance))
    assert answer.status_code == 200, answer.text
    diff = answer.json()
    assert shown(diff["added"]) == FINANCE_RELATIONS
    assert diff["removed"]["relations"] == []
    assert diff["kept"] == []
    assert set(diff["data"]) == {INVOICES, ORDERS, COSTS}
    assert (diff["to"]["hiddenNodes"], diff["to"]["hiddenRelations"]) == (3, 3)
    assert (diff["from"]["hiddenNodes"], diff["from"]["hiddenRelations"]) == (0, 0)
    assert "crm" not in answer.text
    assert "hr:" not in answer.text
    full = estate.get(path, params=asked, headers=bearer(READ_ALL)).json()
    assert "hiddenNodes" not in full["to"]
    assert shown(full["added"]) > FINANCE_RELATIONS
    hidden = estate.get(
        f"/v3/namespaces/{HR}/datasets/salaries/lineage/diff", headers=bearer(finance)
    )
    missing = estate.get(
        f"/v3/namespaces/{HR}/datasets/nothing/lineage/diff", headers=bearer(finance)
    )
    assert hidden.status_code == 404
    assert hidden.content == missing.content.replace(b"nothing", b"salaries")


def test_a_second_readable_domain_opens_the_walk_through_it(estate: TestClient) -> None:
    token = issue(estate, "read:finance/*", "read:hr")["token"]
    answer = lineage(estate, token, f"/v3/namespaces/{F}/datasets/invoices/lineage")
    assert shown(answer) == FINANCE_RELATIONS | {
        (SALARIES, COSTS_JOB, "read"),
        (SALARIES, PAYROLL, "write"),
        (EMPLOYEES, PAYROLL, "read"),
    }
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)


def test_a_full_token_sees_everything_and_no_hidden_counts(estate: TestClient) -> None:
    answer = lineage(estate, READ_ALL, f"/v3/namespaces/{F}/datasets/invoices/lineage")
    assert len(shown(answer)) == 12  # every relation of the estate is connected
    assert "hiddenNodes" not in answer
    assert "hiddenRelations" not in answer


def test_upstream_lineage_stops_at_hidden_sources(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    path = f"/v3/namespaces/{F}/datasets/costs/lineage"
    answer = lineage(estate, finance, path, direction="upstream")
    assert shown(answer) == FINANCE_RELATIONS
    # hr:salaries into costs, crm:customers into invoices.
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)


def test_downstream_lineage_stops_at_a_hidden_reader(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    path = f"/v3/namespaces/{F}/datasets/costs/lineage"
    answer = lineage(estate, finance, path, direction="downstream")
    # Downstream of costs there is only crm:churn reading it: nothing shown, one hidden.
    assert shown(answer) == set()
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)
    full = lineage(estate, READ_ALL, path, direction="downstream")
    assert shown(full) == {
        (COSTS, job_key(CRM, "churn"), "read"),
        (dataset_key(CRM, "churn_scores"), job_key(CRM, "churn"), "write"),
    }


def test_job_lineage_shows_finance_only_and_counts_each_hidden_thing_once(
    estate: TestClient,
) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = lineage(estate, finance, f"/v3/namespaces/{FJ}/jobs/costs/lineage")
    assert shown(answer) == FINANCE_RELATIONS
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (3, 3)


HIDDEN_AND_MISSING = [
    (f"/v3/namespaces/{HR}/datasets/salaries/lineage", "hr"),
    (f"/v3/namespaces/{HR}/jobs/payroll/lineage", "hr"),
    (f"/api/v1/namespaces/{HR}", "hr"),
    (f"/api/v1/namespaces/{HR}/datasets", "hr"),
    (f"/api/v1/namespaces/{HR}/datasets/salaries", "hr"),
    (f"/api/v1/namespaces/{HR}/jobs/payroll", "hr"),
    (f"/api/v1/namespaces/{HR}/jobs/payroll/runs", "hr"),
]


@pytest.mark.parametrize(("path", "namespace"), HIDDEN_AND_MISSING)
def test_a_hidden_entity_is_404_byte_for_byte_like_a_missing_one(
    estate: TestClient, path: str, namespace: str
) -> None:
    """Asked by a reader of finance, an hr dataset or job that exists answers the same bytes
    as one that does not, and as a namespace never stored (its name in place of hr's)."""
    finance = issue(estate, "read:finance/*")["token"]
    hidden = estate.get(path, params=WINDOW, headers=bearer(finance))
    absent_name = estate.get(
        path.replace("salaries", "no_such").replace("payroll", "no_such"),
        params=WINDOW,
        headers=bearer(finance),
    )
    never_stored = estate.get(
        path.replace(f"/{namespace}", "/nowhere"), params=WINDOW, headers=bearer(ADMIN)
    )
    assert hidden.status_code == absent_name.status_code == never_stored.status_code == 404
    assert hidden.content == absent_name.content
    assert hidden.content == never_stored.content.replace(b"nowhere", namespace.encode())

    def headers(response: Any) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k != "x-request-id")

    assert headers(hidden) == headers(absent_name)


def test_marquez_lists_show_only_readable_namespaces(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    namespaces = estate.get("/api/v1/namespaces", headers=bearer(finance)).json()
    assert [n["name"] for n in namespaces["namespaces"]] == [FIN_JOBS, FIN_DS]
    assert namespaces["totalCount"] == 2
    jobs = estate.get("/api/v1/jobs", headers=bearer(finance)).json()
    assert sorted(j["name"] for j in jobs["jobs"]) == ["build_invoices", "costs"]
    assert jobs["totalCount"] == 2
    datasets = estate.get(f"/api/v1/namespaces/{F}/datasets", headers=bearer(finance))
    assert sorted(d["name"] for d in datasets.json()["datasets"]) == ["costs", "invoices", "orders"]


def test_search_finds_and_counts_only_readable_names(estate: TestClient) -> None:
    """`s` is in every finance name, in hr's employees and salaries, and in crm's
    raw_customers, customers and churn_scores: a finance reader finds and counts its own."""
    finance = issue(estate, "read:finance/*")["token"]
    found = estate.get("/api/v1/search", params={"q": "s"}, headers=bearer(finance)).json()
    assert [(r["name"], r["namespace"], r["type"]) for r in found["results"]] == [
        ("build_invoices", FIN_JOBS, "JOB"),
        ("costs", FIN_JOBS, "JOB"),
        ("costs", FIN_DS, "DATASET"),
        ("invoices", FIN_DS, "DATASET"),
        ("orders", FIN_DS, "DATASET"),
    ]
    assert found["totalCount"] == 5
    hr_only = {"q": "s", "namespace": HR}
    hidden = estate.get("/api/v1/search", params=hr_only, headers=bearer(finance))
    assert hidden.json() == {"totalCount": 0, "results": []}
    full = estate.get("/api/v1/search", params={"q": "s"}, headers=bearer(READ_ALL)).json()
    assert full["totalCount"] == 10


def test_sources_are_those_the_readable_datasets_name(estate: TestClient) -> None:
    """The estate's datasets carry no `dataSource` facet, so each namespace of datasets is a
    source: finance's warehouse for a finance reader; hr's is 404 like one never seen."""
    finance = bearer(issue(estate, "read:finance/*")["token"])
    listed = estate.get("/api/v1/sources", headers=finance).json()
    assert [s["name"] for s in listed["sources"]] == [FIN_DS]
    assert listed["totalCount"] == 1
    hidden = estate.get(f"/api/v1/sources/{HR}", headers=finance)
    missing = estate.get("/api/v1/sources/nowhere", headers=finance)
    assert hidden.status_code == 404
    assert hidden.content == missing.content.replace(b"nowhere", HR.encode())
    assert estate.get(f"/api/v1/sources/{HR}", headers=bearer(READ_ALL)).status_code == 200
    everything = estate.get("/api/v1/sources", headers=bearer(READ_ALL)).json()
    assert [s["name"] for s in everything["sources"]] == [CRM, FIN_DS, HR]


def test_a_marquez_job_names_none_of_its_hidden_inputs(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    job = estate.get(f"/api/v1/namespaces/{FJ}/jobs/costs", headers=bearer(finance))
    assert job.status_code == 200
    document = job.json()
    assert document["inputs"] == [{"namespace": FIN_DS, "name": "invoices"}]
    assert document["outputs"] == [{"namespace": FIN_DS, "name": "costs"}]
    assert "salaries" not in job.text
    full = estate.get(f"/api/v1/namespaces/{FJ}/jobs/costs", headers=bearer(READ_ALL))
    assert {"namespace": HR, "name": "salaries"} in full.json()["inputs"]


def test_a_token_reading_everything_by_pattern_sees_every_event(estate: TestClient) -> None:
    everything = issue(estate, "read:*")["token"]
    answer = estate.get("/api/v1/events/lineage", headers=bearer(everything))
    assert answer.status_code == 200
    assert answer.json()["totalCount"] == 5


def test_the_estate_pages_show_only_readable_namespaces(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    counts = estate.get("/v3/namespaces", headers=bearer(finance)).json()
    assert [(n["name"], n["datasets"], n["jobs"]) for n in counts["namespaces"]] == [
        (FIN_JOBS, 0, 2),
        (FIN_DS, 3, 0),
    ]
    assert counts["totalCount"] == 2
    written = estate.get("/v3/datasets/recently-written", headers=bearer(finance)).json()
    assert sorted(d["name"] for d in written["datasets"]) == ["costs", "invoices"]
    assert written["totalCount"] == 2
    runs = estate.get("/v3/jobs/latest-runs", headers=bearer(finance)).json()
    assert sorted(r["job"]["name"] for r in runs["runs"]) == ["build_invoices", "costs"]
    assert runs["totalCount"] == 2


def test_job_dependencies_with_a_hidden_end_are_left_out(estate: TestClient) -> None:
    """The costs run waited for finance's build_invoices and for hr's payroll: a finance
    reader sees the first dependency and nothing of the second."""

    def waited_for(namespace: str, name: str) -> dict[str, Any]:
        return {
            "dependency_type": "IMPLICIT_DEPENDENCY",
            "job": {"namespace": namespace, "name": name},
        }

    facet = {
        "_producer": "https://example.com/scheduler",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/JobDependenciesRunFacet.json",
        "upstream": [waited_for(FIN_JOBS, "build_invoices"), waited_for(HR, "payroll")],
    }
    event = run_event(
        (FIN_JOBS, "costs"), run_id=RUNS["costs"], run_facets={"jobDependencies": facet}
    )
    stored = estate.post("/api/v1/lineage", json=event, headers=bearer(WRITE_ALL))
    assert stored.status_code == 201, stored.text
    path = f"/v3/namespaces/{FJ}/jobs/costs/lineage"

    everything = lineage(estate, READ_ALL, path, direction="upstream", levels="1")
    assert {d["upstream"] for d in everything["jobDependencies"]} == {BUILD, PAYROLL}

    finance = issue(estate, "read:finance/*")["token"]
    answer = lineage(estate, finance, path, direction="upstream", levels="1")
    assert [(d["upstream"], d["downstream"]) for d in answer["jobDependencies"]] == [
        (BUILD, COSTS_JOB)
    ]
    assert PAYROLL not in answer["programs"]
    assert "hr" not in names_in(answer).replace("hiddenRelations", "")
