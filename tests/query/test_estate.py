"""The estate at a glance (design §5): namespaces with their counts, datasets by their last
write, each job's latest run with the failed ones first; every list paged."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event


def _post(client: TestClient, *events: dict[str, Any]) -> None:
    response = client.post("/api/v1/lineage", json=list(events))
    assert response.status_code == 201, response.text


def _ok(client: TestClient, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


def _estate(client: TestClient) -> None:
    """Two namespaces: `shop` with 3 datasets and 2 jobs, `logs` with 1 dataset and 1 job.

    t+1 load (shop) reads logs.clicks, writes shop.orders          COMPLETE
    t+2 report (shop) reads shop.orders, writes shop.revenue       FAIL
    t+3 load again, writes shop.orders and shop.customers          COMPLETE
    t+4 ship (logs) writes logs.clicks                             ABORT
    """
    _post(
        client,
        run_event(
            ("shop", "load"),
            time=BASE_TIME + hours(1),
            inputs=[ds("logs", "clicks")],
            outputs=[ds("shop", "orders")],
        ),
        run_event(
            ("shop", "report"),
            event_type="FAIL",
            time=BASE_TIME + hours(2),
            inputs=[ds("shop", "orders")],
            outputs=[ds("shop", "revenue")],
        ),
        run_event(
            ("shop", "load"),
            time=BASE_TIME + hours(3),
            outputs=[ds("shop", "orders"), ds("shop", "customers")],
        ),
        run_event(
            ("logs", "ship"),
            event_type="ABORT",
            time=BASE_TIME + hours(4),
            outputs=[ds("logs", "clicks")],
        ),
    )


def test_namespaces_are_counted_and_paged(client: TestClient) -> None:
    _estate(client)
    answer = _ok(client, "/v3/namespaces")
    counts = [(n["name"], n["datasets"], n["jobs"]) for n in answer["namespaces"]]
    assert counts == [("logs", 1, 1), ("shop", 3, 2)]
    assert answer["totalCount"] == 2
    paged = _ok(client, "/v3/namespaces?limit=1&offset=1")
    assert [n["name"] for n in paged["namespaces"]] == ["shop"]
    assert paged["totalCount"] == 2


def test_a_deleted_dataset_is_not_counted(client: TestClient) -> None:
    _estate(client)
    assert client.delete("/api/v1/namespaces/shop/datasets/revenue").status_code == 200
    counts = {n["name"]: n["datasets"] for n in _ok(client, "/v3/namespaces")["namespaces"]}
    assert counts == {"logs": 1, "shop": 2}


def test_datasets_come_by_their_last_write(client: TestClient) -> None:
    _estate(client)
    answer = _ok(client, "/v3/datasets/recently-written")
    written = [(d["namespace"], d["name"], d["writtenAt"]) for d in answer["datasets"]]
    # orders and customers were last written together at t+3; the name breaks the tie.
    assert written == [
        ("logs", "clicks", "2026-11-01T16:00:00Z"),
        ("shop", "customers", "2026-11-01T15:00:00Z"),
        ("shop", "orders", "2026-11-01T15:00:00Z"),
        ("shop", "revenue", "2026-11-01T14:00:00Z"),
    ]
    assert answer["totalCount"] == 4
    page = _ok(client, "/v3/datasets/recently-written?limit=2&offset=2")
    assert [d["name"] for d in page["datasets"]] == ["orders", "revenue"]


def test_each_jobs_latest_run_failed_first(client: TestClient) -> None:
    _estate(client)
    answer = _ok(client, "/v3/jobs/latest-runs")
    runs = [(r["job"]["name"], r["state"]) for r in answer["runs"]]
    # ship (ABORT, t+4) and report (FAIL, t+2) first, newest first; then load's latest run.
    assert runs == [("ship", "ABORT"), ("report", "FAIL"), ("load", "COMPLETE")]
    assert answer["totalCount"] == 3
    assert answer["failedCount"] == 2
    assert answer["runs"][2]["endedAt"] == "2026-11-01T15:00:00Z"  # the second run of load
    page = _ok(client, "/v3/jobs/latest-runs?limit=1&offset=2")
    assert [r["job"]["name"] for r in page["runs"]] == ["load"]


def test_a_later_success_clears_a_failure(client: TestClient) -> None:
    _estate(client)
    _post(client, run_event(("shop", "report"), time=BASE_TIME + hours(5)))
    answer = _ok(client, "/v3/jobs/latest-runs")
    assert [(r["job"]["name"], r["state"]) for r in answer["runs"]] == [
        ("ship", "ABORT"),
        ("report", "COMPLETE"),
        ("load", "COMPLETE"),
    ]
    assert answer["failedCount"] == 1


def test_a_bad_page_is_refused(client: TestClient) -> None:
    for url in ("/v3/namespaces?limit=-1", "/v3/jobs/latest-runs?offset=x"):
        response = client.get(url)
        assert response.status_code in (400, 422), response.text
        assert "limit" in response.text or "offset" in response.text


def test_an_empty_store_has_empty_lists(client: TestClient) -> None:
    assert _ok(client, "/v3/namespaces") == {"namespaces": [], "totalCount": 0}
    assert _ok(client, "/v3/datasets/recently-written") == {"datasets": [], "totalCount": 0}
    assert _ok(client, "/v3/jobs/latest-runs") == {"runs": [], "totalCount": 0, "failedCount": 0}
