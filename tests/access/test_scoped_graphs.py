"""The whole graph and the map, filtered by the token's namespaces (design §5), on the estate
of `estate.py`. Its flows (source -> target, through the job):

    crm:raw_customers -> crm:customers            (crm:extract)
    crm:customers -> finance:invoices             (finance:build_invoices)
    finance:orders -> finance:invoices            (finance:build_invoices)
    hr:employees -> hr:salaries                   (hr:payroll)
    hr:salaries -> finance:costs                  (finance:costs)
    finance:invoices -> finance:costs             (finance:costs)
    finance:costs -> crm:churn_scores             (crm:churn)

A flow is shown when its source, target and job all are; one naming a shown node and a
hidden one is counted, with the hidden nodes it names."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import CRM, FIN_DS, FIN_JOBS, HR, READ_ALL, bearer, dataset_key, issue
from tests.access.estate import job_key as job

ORDERS, INVOICES, COSTS = (dataset_key(FIN_DS, n) for n in ("orders", "invoices", "costs"))
EMPLOYEES, SALARIES = dataset_key(HR, "employees"), dataset_key(HR, "salaries")
BUILD, COSTS_JOB, PAYROLL = (
    job(FIN_JOBS, "build_invoices"),
    job(FIN_JOBS, "costs"),
    job(HR, "payroll"),
)


def graph(client: TestClient, token: str, **params: str) -> dict[str, Any]:
    response = client.get("/v3/lineage/graph", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def flows(answer: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f["source"], f["target"], f["program"]) for f in answer["flows"]}


def test_a_finance_reader_sees_the_finance_graph_and_counts_what_it_met(
    estate: TestClient,
) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = graph(estate, finance)
    assert set(answer["data"]) == {ORDERS, INVOICES, COSTS}
    assert set(answer["programs"]) == {BUILD, COSTS_JOB}
    assert flows(answer) == {(ORDERS, INVOICES, BUILD), (INVOICES, COSTS, COSTS_JOB)}
    # Met: customers -> invoices, salaries -> costs, costs -> churn_scores (through churn):
    # four hidden nodes (customers, salaries, churn_scores, churn) on three flows.
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (4, 3)
    assert "crm" not in repr(answer)
    assert f"'{HR}" not in repr(answer)


def test_a_second_domain_opens_its_flows(estate: TestClient) -> None:
    token = issue(estate, "read:finance/*", "read:hr")["token"]
    answer = graph(estate, token)
    assert set(answer["data"]) == {ORDERS, INVOICES, COSTS, EMPLOYEES, SALARIES}
    assert set(answer["programs"]) == {BUILD, COSTS_JOB, PAYROLL}
    assert flows(answer) == {
        (ORDERS, INVOICES, BUILD),
        (INVOICES, COSTS, COSTS_JOB),
        (EMPLOYEES, SALARIES, PAYROLL),
        (SALARIES, COSTS, COSTS_JOB),
    }
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (3, 2)


def test_a_full_reader_gets_the_whole_graph_without_hidden_counts(estate: TestClient) -> None:
    answer = graph(estate, READ_ALL)
    assert len(answer["data"]) == 8
    assert len(answer["flows"]) == 7
    assert "hiddenNodes" not in answer
    assert "hiddenRelations" not in answer
    everything = issue(estate, "read:*")["token"]
    assert graph(estate, everything) == answer


def test_the_cap_counts_shown_nodes_only(estate: TestClient) -> None:
    """Capped at three nodes, a finance reader gets finance datasets in name order, not a
    graph cut short by datasets it may not see."""
    from upstream.api.app import create_app
    from upstream.settings import Settings

    settings = estate.app.state.settings  # type: ignore[attr-defined]
    capped = Settings(  # type: ignore[call-arg]
        db_url=settings.db_url, tokens=settings.tokens, max_lineage_nodes=3
    )
    with TestClient(create_app(capped, migrate=False)) as client:
        finance = issue(client, "read:finance/*")["token"]
        answer = graph(client, finance)
    assert answer["truncated"] is True
    # costs alone (its flows reach no dataset kept before it), then invoices with the
    # costs job; orders would need build_invoices too: a fourth node.
    assert set(answer["data"]) == {COSTS, INVOICES}
    assert set(answer["programs"]) == {COSTS_JOB}


@pytest.mark.parametrize("level", ["1"])
def test_the_map_groups_only_shown_datasets(estate: TestClient, level: str) -> None:
    finance = issue(estate, "read:finance/*")["token"]
    answer = graph(estate, finance, rollup="hierarchy", level=level)
    assert [(g["containers"], g["datasets"], g["flowsWithin"]) for g in answer["groups"]] == [
        ([FIN_DS], 3, 2)
    ]
    assert answer["edges"] == []
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (4, 3)
    full = graph(estate, READ_ALL, rollup="hierarchy", level=level)
    assert {tuple(g["containers"]) for g in full["groups"]} == {(CRM,), (FIN_DS,), (HR,)}
    assert "hiddenNodes" not in full


def marquez(client: TestClient, token: str, node: str) -> dict[str, Any]:
    response = client.get("/api/v1/lineage", params={"nodeId": node}, headers=bearer(token))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_the_marquez_graph_walks_only_through_shown_nodes(estate: TestClient) -> None:
    """Around the invoices: downstream the costs job and dataset, then crm's churn reading
    costs (hidden); upstream build_invoices with the orders it read, and crm's customers it
    read too (hidden)."""
    finance = issue(estate, "read:finance/*")["token"]
    answer = marquez(estate, finance, f"dataset:{FIN_DS}:invoices")
    assert {node["id"] for node in answer["graph"]} == {
        f"dataset:{FIN_DS}:invoices",
        f"dataset:{FIN_DS}:orders",
        f"dataset:{FIN_DS}:costs",
        f"job:{FIN_JOBS}:build_invoices",
        f"job:{FIN_JOBS}:costs",
    }
    # Met: build_invoices reading customers, churn reading costs.
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    edges = {(e["origin"], e["destination"]) for n in answer["graph"] for e in n["outEdges"]}
    assert (f"dataset:{FIN_DS}:orders", f"job:{FIN_JOBS}:build_invoices") in edges
    assert "crm" not in repr(answer)
    assert f"'{HR}" not in repr(answer)
    full = marquez(estate, READ_ALL, f"dataset:{FIN_DS}:invoices")
    assert len(full["graph"]) == 10
    assert "hiddenNodes" not in full


def test_a_hidden_marquez_node_is_404_like_a_missing_one(estate: TestClient) -> None:
    finance = issue(estate, "read:finance/*")["token"]

    def asked(node: str) -> Any:
        return estate.get("/api/v1/lineage", params={"nodeId": node}, headers=bearer(finance))

    hidden, missing = asked(f"dataset:{HR}:salaries"), asked(f"dataset:{HR}:no_such")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries")
    hidden, missing = asked(f"job:{CRM}:churn"), asked(f"job:{CRM}:no_such")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"churn")
