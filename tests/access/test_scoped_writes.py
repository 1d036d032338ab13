"""Writes scoped by namespace (design §5): an event needs write on its job's namespace; the
datasets it names are recorded whatever their namespace, but the facets of one the token may
not write never merge into it; a refusal is 403 naming the namespace, and nothing is stored."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.access.estate import ADMIN, CRM, FIN_DS, FIN_JOBS, HR, WINDOW, bearer, issue
from tests.builders import ds, run_event
from upstream.client.http import segment

SCHEMA = {
    "_producer": "https://example.com",
    "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
    "fields": [{"name": "id", "type": "int"}],
}


def dataset(client: TestClient, namespace: str, name: str) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{segment(namespace)}/datasets/{name}"
    response = client.get(path, headers=bearer(ADMIN))
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def job_names(client: TestClient) -> list[str]:
    jobs = client.get("/api/v1/jobs", headers=bearer(ADMIN)).json()["jobs"]
    return sorted(f"{j['namespace']}:{j['name']}" for j in jobs)


def test_a_writer_of_finance_records_lineage_across_domains_but_merges_only_its_facets(
    server: TestClient,
) -> None:
    writer = issue(server, "write:finance/*")["token"]
    event = run_event(
        (FIN_JOBS, "load"),
        inputs=[ds(CRM, "customers", schema=SCHEMA)],
        outputs=[ds(FIN_DS, "accounts", schema=SCHEMA)],
    )
    response = server.post("/api/v1/lineage", json=event, headers=bearer(writer))
    assert response.status_code == 201, response.text
    assert dataset(server, FIN_DS, "accounts")["fields"] == [
        {"name": "id", "type": "int", "tags": [], "description": None}
    ]
    customers = dataset(server, CRM, "customers")
    assert customers["fields"] == []
    assert "schema" not in customers["facets"]
    lineage = server.get(
        f"/v3/namespaces/{segment(FIN_DS)}/datasets/accounts/lineage",
        params={**WINDOW, "direction": "upstream"},
        headers=bearer(ADMIN),
    ).json()
    assert f"dataset.{CRM}.customers" in lineage["data"]


def test_a_post_for_a_job_in_a_namespace_the_token_may_not_write_is_refused_whole(
    server: TestClient,
) -> None:
    writer = issue(server, "write:finance/*")["token"]
    allowed = run_event((FIN_JOBS, "load"), outputs=[ds(FIN_DS, "accounts")])
    refused = run_event((HR, "payroll"), outputs=[ds(HR, "salaries")])
    response = server.post("/api/v1/lineage", json=[allowed, refused], headers=bearer(writer))
    assert response.status_code == 403
    assert response.json()["message"] == (
        "this token may not write to namespace 'hr': that needs a scope write:<pattern> matching it"
    )
    assert job_names(server) == []


def test_a_dataset_event_needs_write_on_its_dataset(server: TestClient) -> None:
    writer = issue(server, "write:finance/*")["token"]
    event = {
        "eventTime": "2026-11-01T12:00:00Z",
        "dataset": {"namespace": HR, "name": "salaries", "facets": {"schema": SCHEMA}},
        "producer": "https://example.com",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
    }
    response = server.post("/api/v1/lineage", json=event, headers=bearer(writer))
    assert response.status_code == 403
    assert "'hr'" in response.json()["message"]
    assert server.get("/api/v1/namespaces", headers=bearer(ADMIN)).json()["namespaces"] == []


def test_a_token_without_any_write_scope_posts_nothing(server: TestClient) -> None:
    reader = issue(server, "read:*")["token"]
    event = run_event((FIN_JOBS, "load"), outputs=[ds(FIN_DS, "accounts")])
    response = server.post("/api/v1/lineage", json=event, headers=bearer(reader))
    assert response.status_code == 403
    assert response.json()["message"] == "this token has no write scope: it may not POST anything"
    assert job_names(server) == []


def test_deleting_or_tagging_needs_write_on_the_namespace(estate: TestClient) -> None:
    token = issue(estate, "read:*", "write:finance/*")["token"]
    hr = estate.delete(f"/api/v1/namespaces/{HR}/datasets/salaries", headers=bearer(token))
    assert hr.status_code == 403
    assert "'hr'" in hr.json()["message"]
    assert dataset(estate, HR, "salaries")["deleted"] is False
    tag = estate.post(f"/api/v1/namespaces/{HR}/jobs/payroll/tags/pii", headers=bearer(token))
    assert tag.status_code == 403
    finance = estate.delete(
        f"/api/v1/namespaces/{segment(FIN_DS)}/datasets/orders", headers=bearer(token)
    )
    assert finance.status_code == 200


def test_a_writer_that_may_not_see_a_namespace_finds_it_missing(estate: TestClient) -> None:
    token = issue(estate, "write:finance/*")["token"]
    hr = estate.delete(f"/api/v1/namespaces/{HR}/datasets/salaries", headers=bearer(token))
    assert hr.status_code == 404
    assert hr.json()["message"] == "namespace 'hr' not found"


def test_field_operations_need_write_on_the_namespace(server: TestClient) -> None:
    token = issue(server, "read:*", "write:finance/*")["token"]
    document = {
        "destination": {"namespace": HR, "name": "salaries"},
        "source": {"namespace": HR, "name": "employees"},
        "operations": [{"name": "read", "inputs": [{"source": 0}], "outputs": ["id"]}],
        "job": {"name": "payroll"},
        "run": {"runId": "00000000-0000-4000-8000-0000000000aa"},
    }
    response = server.post(
        f"/v3/namespaces/{HR}/lineage/field-operations", json=document, headers=bearer(token)
    )
    assert response.status_code == 403
    assert "'hr'" in response.json()["message"]
    assert job_names(server) == []
