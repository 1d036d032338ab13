"""Recorded field operations filtered by the token's namespaces (design §5): the paths of a
field, the fields with lineage, the operations a field went through. On the estate of
`estate.py`, these runs recorded operations (field-operations documents):

    R1 finance/airflow:build_invoices -> finance/warehouse:invoices
         read_customers: crm:customers -> customer_id
         read_orders: finance/warehouse:orders -> amount, order_customer
         total: amount -> amount
    R2 hr:audit -> finance/warehouse:invoices
         copy: finance/warehouse:orders -> amount
    R3 finance/airflow:export -> crm:exported
         read: finance/warehouse:invoices -> amount

A path is shown when its job and every dataset it names are readable; walked from the
dataset asked about, a hidden job is met first (only the relation linking the asked dataset
to it counts), else each relation with a hidden dataset is met.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
    CRM,
    FIN_DS,
    FIN_JOBS,
    HR,
    READ_ALL,
    RUNS,
    WINDOW,
    WRITE_ALL,
    bearer,
    issue,
    symlinks,
)
from tests.builders import ds, run_event
from upstream.client.http import segment

F = segment(FIN_DS)
R1 = "00000000-0000-4000-8000-0000000000b1"
R2 = "00000000-0000-4000-8000-0000000000b2"
R3 = "00000000-0000-4000-8000-0000000000b3"


def _document(
    job: tuple[str, str],
    run: str,
    destination: tuple[str, str],
    sources: list[tuple[str, str]],
    operations: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "destination": {"namespace": destination[0], "name": destination[1]},
        "sources": [{"namespace": ns, "name": name} for ns, name in sources],
        "operations": operations,
        "job": {"namespace": job[0], "name": job[1]},
        "run": {"runId": run},
    }


def op(name: str, inputs: list[str], outputs: list[str]) -> dict[str, Any]:
    return {"name": name, "description": name, "inputs": inputs, "outputs": outputs}


@pytest.fixture
def recorded(estate: TestClient) -> TestClient:
    documents = [
        _document(
            (FIN_JOBS, "build_invoices"),
            R1,
            (FIN_DS, "invoices"),
            [(CRM, "customers"), (FIN_DS, "orders")],
            [
                op("read_customers", ["customers"], ["customer_id"]),
                op("read_orders", ["orders"], ["amount", "order_customer"]),
                op("total", ["amount"], ["amount"]),
            ],
        ),
        _document(
            (HR, "audit"),
            R2,
            (FIN_DS, "invoices"),
            [(FIN_DS, "orders")],
            [op("copy", ["orders"], ["amount"])],
        ),
        _document(
            (FIN_JOBS, "export"),
            R3,
            (CRM, "exported"),
            [(FIN_DS, "invoices")],
            [op("read", ["invoices"], ["amount"])],
        ),
    ]
    for document in documents:
        namespace = segment(document["destination"]["namespace"])
        response = estate.post(
            f"/v3/namespaces/{namespace}/lineage/field-operations",
            json=document,
            headers=bearer(WRITE_ALL),
        )
        assert response.status_code == 201, response.text
    return estate


def get(client: TestClient, path: str, token: str, **params: str) -> Any:
    response = client.get(
        f"/v3/namespaces/{path}", params={**WINDOW, **params}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    return response.json()


def runs_of(paths: list[dict[str, Any]]) -> list[list[str]]:
    return [[run["runId"] for run in path["runs"]] for path in paths]


def test_paths_of_hidden_jobs_are_left_out_and_counted(recorded: TestClient) -> None:
    """invoices.amount: R1's path [read_orders, total] is finance's; R2's [copy] is hr's
    audit, met once (invoices <- audit)."""
    finance = issue(recorded, "read:finance/*")["token"]
    path = f"{F}/datasets/invoices/fields/amount/lineage"
    answer = get(recorded, path, finance)
    assert runs_of(answer["paths"]) == [[R1]]
    assert [o["name"] for o in answer["paths"][0]["operations"]] == ["read_orders", "total"]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)
    assert "audit" not in repr(answer)
    full = get(recorded, path, READ_ALL)
    assert sorted(runs_of(full["paths"])) == [[R1], [R2]]
    assert "hiddenNodes" not in full


def test_a_path_reading_a_hidden_dataset_is_left_out_and_counted(recorded: TestClient) -> None:
    """invoices.customer_id was made by read_customers from crm's customers: no path, one
    hidden dataset met (customers <- build_invoices)."""
    finance = issue(recorded, "read:finance/*")["token"]
    path = f"{F}/datasets/invoices/fields/customer_id/lineage"
    answer = get(recorded, path, finance)
    assert answer["paths"] == []
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)
    assert "crm" not in repr(answer)
    assert runs_of(get(recorded, path, READ_ALL)["paths"]) == [[R1]]
    both = issue(recorded, "read:finance/*", f"read:{CRM}", name="both")["token"]
    wider = get(recorded, path, both)
    assert runs_of(wider["paths"]) == [[R1]]
    assert (wider["hiddenNodes"], wider["hiddenRelations"]) == (0, 0)


def test_operations_both_ways_show_only_readable_jobs_and_datasets(recorded: TestClient) -> None:
    """invoices.amount, incoming: R1's [read_orders, total] shown, R2 (hr's audit) met;
    outgoing: R3's [read] by finance's export wrote crm's exported, met. Two hidden nodes
    (audit, exported), two relations."""
    finance = issue(recorded, "read:finance/*")["token"]
    path = f"{F}/datasets/invoices/lineage/fields/amount/operations"
    answer = get(recorded, path, finance)
    assert [
        ([o["name"] for o in group["operations"]], group["programs"][0]["lastRunId"])
        for group in answer["incoming"]
    ] == [(["read_orders", "total"], R1)]
    assert answer["outgoing"] == []
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    assert "audit" not in repr(answer)
    assert "exported" not in repr(answer)
    full = get(recorded, path, READ_ALL)
    assert len(full["incoming"]) == 2
    assert [g["dataset"] for g in full["outgoing"]] == [{"namespace": CRM, "name": "exported"}]
    assert "hiddenNodes" not in full


def test_outgoing_operations_of_a_hidden_job_count_the_read_that_met_it(
    recorded: TestClient,
) -> None:
    """orders.amount, outgoing: R1 (read_orders, total into invoices) shown; R2's copy by
    hr's audit met at its read of orders."""
    finance = issue(recorded, "read:finance/*")["token"]
    path = f"{F}/datasets/orders/lineage/fields/amount/operations"
    answer = get(recorded, path, finance, direction="outgoing")
    assert [(g["dataset"]["name"], g["programs"][0]["lastRunId"]) for g in answer["outgoing"]] == [
        ("invoices", R1)
    ]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)
    assert len(get(recorded, path, READ_ALL, direction="outgoing")["outgoing"]) == 2


def test_a_field_has_lineage_only_by_an_edge_to_a_readable_field(recorded: TestClient) -> None:
    """invoices' customer_id has lineage only from crm's customers."""
    finance = issue(recorded, "read:finance/*")["token"]
    path = f"{F}/datasets/invoices/lineage/fields"
    assert get(recorded, path, finance) == ["amount", "order_customer"]
    assert get(recorded, path, READ_ALL) == ["amount", "customer_id", "order_customer"]


@pytest.mark.parametrize(
    "tail",
    [
        "/fields/amount/lineage",
        "/lineage/fields",
        "/lineage/fields/amount/operations",
    ],
)
def test_an_alias_of_a_hidden_dataset_is_404_like_a_missing_one(
    recorded: TestClient, tail: str
) -> None:
    """hr's salaries say they are also finance's salaries_view."""
    output = ds(HR, "salaries", symlinks=symlinks(FIN_DS, "salaries_view"))
    event = run_event((HR, "payroll"), run_id=RUNS["payroll"], outputs=[output])
    posted = recorded.post("/api/v1/lineage", json=[event], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(recorded, "read:finance/*")["token"]

    def answer(name: str, token: str) -> Any:
        return recorded.get(
            f"/v3/namespaces/{F}/datasets/{name}{tail}", params=WINDOW, headers=bearer(token)
        )

    hidden, missing = answer("salaries_view", finance), answer("no_such", finance)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries_view")
    # A full reader reaches hr's salaries through the alias: the answers differ.
    known, unknown = answer("salaries_view", READ_ALL), answer("no_such", READ_ALL)
    assert known.content != unknown.content.replace(b"no_such", b"salaries_view")
