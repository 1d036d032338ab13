"""A fixture estate of three domains with cross-domain lineage, and the tokens that see parts
of it. The lineage (each job reads its inputs and writes its outputs):

    crm:raw_customers -> [crm:extract] -> crm:customers
    crm:customers, finance/warehouse:orders -> [finance/airflow:build_invoices]
        -> finance/warehouse:invoices
    hr:employees -> [hr:payroll] -> hr:salaries
    hr:salaries, finance/warehouse:invoices -> [finance/airflow:costs] -> finance/warehouse:costs
    finance/warehouse:costs -> [crm:churn] -> crm:churn_scores
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import PRODUCER, ds, run_event
from upstream.api.app import create_app
from upstream.model.keys import entity_key
from upstream.settings import Settings

FIN_DS, FIN_JOBS, HR, CRM = "finance/warehouse", "finance/airflow", "hr", "crm"
ADMIN, READ_ALL, WRITE_ALL = "r00t-admin-token", "l00k-everything", "s3cret-writer"
SETTINGS_TOKENS = f"admin:{ADMIN},read:{READ_ALL},write:{WRITE_ALL}"
RUNS = {
    "extract": "00000000-0000-4000-8000-000000000001",
    "build_invoices": "00000000-0000-4000-8000-000000000002",
    "payroll": "00000000-0000-4000-8000-000000000003",
    "costs": "00000000-0000-4000-8000-000000000004",
    "churn": "00000000-0000-4000-8000-000000000005",
}
#: Every lineage read of these tests asks for all time.
WINDOW = {"start": "0", "end": "now"}


def estate_events() -> list[dict[str, Any]]:
    return [
        run_event(
            (CRM, "extract"),
            run_id=RUNS["extract"],
            inputs=[ds(CRM, "raw_customers")],
            outputs=[ds(CRM, "customers")],
        ),
        run_event(
            (FIN_JOBS, "build_invoices"),
            run_id=RUNS["build_invoices"],
            inputs=[ds(CRM, "customers"), ds(FIN_DS, "orders")],
            outputs=[ds(FIN_DS, "invoices")],
        ),
        run_event(
            (HR, "payroll"),
            run_id=RUNS["payroll"],
            inputs=[ds(HR, "employees")],
            outputs=[ds(HR, "salaries")],
        ),
        run_event(
            (FIN_JOBS, "costs"),
            run_id=RUNS["costs"],
            inputs=[ds(HR, "salaries"), ds(FIN_DS, "invoices")],
            outputs=[ds(FIN_DS, "costs")],
        ),
        run_event(
            (CRM, "churn"),
            run_id=RUNS["churn"],
            inputs=[ds(FIN_DS, "costs")],
            outputs=[ds(CRM, "churn_scores")],
        ),
    ]


def symlinks(namespace: str, name: str) -> dict[str, Any]:
    """A symlinks facet: the dataset is also `namespace`:`name` (an alias)."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
        "identifiers": [{"namespace": namespace, "name": name, "type": "TABLE"}],
    }


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def server(db_url: str) -> Iterator[TestClient]:
    """The API with tokens configured (an admin, a reader and a writer of everything)."""
    settings = Settings(db_url=db_url, tokens=SETTINGS_TOKENS)  # type: ignore[arg-type]
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client


@pytest.fixture
def estate(server: TestClient) -> TestClient:
    """`server` holding the estate."""
    response = server.post("/api/v1/lineage", json=estate_events(), headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text
    return server


def issue(client: TestClient, *scopes: str, name: str = "t", **extra: Any) -> dict[str, Any]:
    """A new token with `scopes`, issued by the admin."""
    body = {"name": name, "scopes": list(scopes), **extra}
    response = client.post("/v3/tokens", json=body, headers=bearer(ADMIN))
    assert response.status_code == 201, response.text
    document: dict[str, Any] = response.json()
    return document


def dataset_key(namespace: str, name: str) -> str:
    return entity_key("dataset", namespace, name)


def job_key(namespace: str, name: str) -> str:
    return entity_key("job", namespace, name)


def shown(answer: dict[str, Any]) -> set[tuple[str, str, str]]:
    """The relations of a lineage answer as (dataset key, job key, access)."""
    return {
        (r["data"], r["program"], access) for r in answer["relations"] for access in r["accesses"]
    }
