"""Run lineage filtered by the token's namespaces (design §5), on the estate of `estate.py`.
Every run of the estate completed at the same instant, so each read resolves to the run that
wrote the dataset:

    costs read salaries (written by payroll) and invoices (build_invoices);
    build_invoices read customers (extract) and orders (no writer);
    payroll read employees, extract read raw_customers (no writer); churn read costs (costs).
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.access.estate import CRM, FIN_DS, FIN_JOBS, READ_ALL, RUNS, bearer, issue

MISSING_RUN = "00000000-0000-4000-8000-0000000000ff"


def run_lineage(client: TestClient, token: str, run: str, **params: str) -> dict[str, Any]:
    response = client.get(f"/v3/runs/{run}/lineage", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def links(answer: dict[str, Any]) -> set[tuple[str, str, str | None]]:
    """(reader job, dataset, writer job or None) of each read the answer shows."""
    jobs = {r["runId"]: r["job"]["name"] for r in answer["runs"]}
    versions = {v["id"]: v for v in answer["datasetVersions"]}
    found = set()
    for edge in answer["edges"]:
        if edge["type"] == "read":
            version = versions[edge["datasetVersion"]]
            writer = version["writtenBy"]
            found.add(
                (
                    jobs[edge["run"]],
                    f"{version['dataset']['namespace']}:{version['dataset']['name']}",
                    None if writer is None else jobs[writer],
                )
            )
    return found


def test_a_finance_reader_sees_the_finance_runs_around_costs(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = run_lineage(estate, finance, RUNS["costs"])
    assert links(answer) == {
        ("costs", f"{FIN_DS}:invoices", "build_invoices"),
        ("build_invoices", f"{FIN_DS}:orders", None),
    }
    assert {r["job"]["namespace"] for r in answer["runs"]} == {FIN_JOBS}
    # Met: costs reading hr's salaries, build_invoices reading crm's customers, crm's churn
    # reading the costs that run wrote.
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (3, 3)
    assert "crm" not in repr(answer)
    assert "'hr'" not in repr(answer)
    for hidden in ("payroll", "extract", "churn"):
        assert RUNS[hidden] not in repr(answer)


def test_a_full_reader_sees_every_run_and_no_hidden_counts(estate: TestClient) -> None:
    answer = run_lineage(estate, READ_ALL, RUNS["costs"])
    assert links(answer) == {
        ("costs", "hr:salaries", "payroll"),
        ("costs", f"{FIN_DS}:invoices", "build_invoices"),
        ("payroll", "hr:employees", None),
        ("build_invoices", f"{CRM}:customers", "extract"),
        ("build_invoices", f"{FIN_DS}:orders", None),
        ("extract", f"{CRM}:raw_customers", None),
        ("churn", f"{FIN_DS}:costs", "costs"),
    }
    assert "hiddenNodes" not in answer


def test_a_version_a_hidden_run_wrote_is_shown_without_its_writer(estate: TestClient) -> None:
    """A reader of crm and finance's datasets, not finance's jobs: churn read the costs the
    hidden costs run wrote; the read is shown, the writer is not, and the walk stops."""
    token = issue(estate, f"read:{CRM}", f"read:{FIN_DS}")["token"]
    answer = run_lineage(estate, token, RUNS["churn"], direction="upstream")
    assert links(answer) == {("churn", f"{FIN_DS}:costs", None)}
    assert [r["job"]["name"] for r in answer["runs"]] == ["churn"]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)
    assert RUNS["costs"] not in repr(answer)
    assert FIN_JOBS not in repr(answer)
    full = run_lineage(estate, READ_ALL, RUNS["churn"], direction="upstream", levels="1")
    assert links(full) == {("churn", f"{FIN_DS}:costs", "costs")}


def test_downstream_stops_at_a_hidden_reader(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = run_lineage(estate, finance, RUNS["costs"], direction="downstream")
    assert answer["edges"] == []
    assert [r["job"]["name"] for r in answer["runs"]] == ["costs"]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)


def test_a_hidden_run_is_404_byte_for_byte_like_a_missing_one(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    hidden = estate.get(f"/v3/runs/{RUNS['payroll']}/lineage", headers=bearer(finance))
    missing = estate.get(f"/v3/runs/{MISSING_RUN}/lineage", headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(MISSING_RUN.encode(), RUNS["payroll"].encode())

    def headers(response: Any) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k != "x-request-id")

    assert headers(hidden) == headers(missing)
