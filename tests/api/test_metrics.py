"""`GET /metrics`: Prometheus text with ingestion counts, per-route latency, pool gauges."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from upstream.api.app import create_app
from upstream.settings import Settings


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by (name, sorted labels)."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_ingested_events_are_counted_new_and_duplicate(client: TestClient) -> None:
    first = run_event(("ns", "job"), outputs=[ds("ns", "out")])
    second = run_event(("ns", "job2"), inputs=[ds("ns", "out")])
    assert client.post("/api/v1/lineage", json=[first, second]).status_code == 201
    assert client.post("/api/v1/lineage", json=first).status_code == 201  # already stored
    samples = scrape(client)
    assert value(samples, "upstream_events_ingested_total", result="stored") == 2
    assert value(samples, "upstream_events_ingested_total", result="duplicate") == 1
    assert value(samples, "upstream_ingest_rejected_total", reason="invalid") == 0


def test_rejections_are_counted_by_reason(client: TestClient) -> None:
    bad_run_id = run_event(("ns", "job"), run_id="not-a-uuid")
    assert client.post("/api/v1/lineage", json=bad_run_id).status_code == 422
    assert client.post("/api/v1/lineage", json=[bad_run_id, bad_run_id]).status_code == 422
    malformed = client.post(
        "/api/v1/lineage", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400
    plain = client.post("/api/v1/lineage", content=b"x", headers={"content-type": "text/plain"})
    assert plain.status_code == 415
    bomb = gzip.compress(json.dumps([run_event(("ns", "j"))] * 20_000).encode())
    too_large = client.post(
        "/api/v1/lineage",
        content=bomb,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert too_large.status_code == 413
    samples = scrape(client)
    assert value(samples, "upstream_ingest_rejected_total", reason="invalid") == 2
    assert value(samples, "upstream_ingest_rejected_total", reason="malformed") == 1
    assert value(samples, "upstream_ingest_rejected_total", reason="unsupported_media_type") == 1
    assert value(samples, "upstream_ingest_rejected_total", reason="too_large") == 1
    assert value(samples, "upstream_events_ingested_total", result="stored") == 0


def test_latency_is_recorded_per_route_template_not_per_path(client: TestClient) -> None:
    client.get("/health")
    client.get("/health")
    client.get("/no/such/page")
    client.get("/another/missing/page")
    samples = scrape(client)
    histogram = "upstream_http_request_duration_seconds"
    assert value(samples, f"{histogram}_count", method="GET", route="/health") == 2
    assert value(samples, f"{histogram}_count", method="GET", route="unmatched") == 2
    assert value(samples, f"{histogram}_bucket", method="GET", route="/health", le="+Inf") == 2
    requests = "upstream_http_requests_total"
    assert value(samples, requests, method="GET", route="/health", status="200") == 2
    assert value(samples, requests, method="GET", route="unmatched", status="404") == 2
    # No series is ever labelled with a raw path.
    assert not any(
        dict(labels).get("route", "").startswith(("/no/", "/another/")) for _, labels in samples
    )
    # A GET that fails is not an ingestion rejection.
    assert value(samples, "upstream_ingest_rejected_total", reason="client_error") == 0


def test_pool_gauges_describe_the_store(settings: Settings) -> None:
    """Every connection the requests used was given back: none in use, and the pool holds
    the ones opened (the write, and the graph index's load at start) as idle. The
    subscriptions' watcher is off: its rounds, once a second, take a connection of their
    own, and one under way at the scrape is in use by design, not kept by a request."""
    quiet = settings.model_copy(update={"watch": False})
    with TestClient(create_app(quiet, migrate=False)) as client:
        wait_until_ready(client)
        assert client.post("/api/v1/lineage", json=run_event(("ns", "job"))).status_code == 201
        samples = scrape(client)
    assert value(samples, "upstream_db_pool_size") == 5
    assert value(samples, "upstream_db_pool_connections", state="in_use") == 0
    assert 1 <= value(samples, "upstream_db_pool_connections", state="idle") <= 5


def wait_until_ready(client: TestClient) -> None:
    """Wait for `/ready`: the graph index has loaded and given its connection back."""
    deadline = time.monotonic() + 60
    while client.get("/ready").status_code != 200:
        assert time.monotonic() < deadline, "the server never became ready"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (400, "malformed"),
        (401, "unauthenticated"),
        (403, "forbidden"),
        (408, "too_slow"),
        (413, "too_large"),
        (422, "invalid"),
        (499, "client_disconnected"),
        (404, "client_error"),
        (503, "server_error"),
    ],
)
def test_rejection_reason_names(status: int, reason: str) -> None:
    from upstream.api.metrics import rejection_reason

    assert rejection_reason(status) == reason


@pytest.mark.slow
def test_several_workers_report_their_sum(tmp_path: Path) -> None:
    """`serve --workers 2` aggregates: any worker's scrape counts every worker's events.

    SQLite only: the aggregation is between processes and has nothing to do with the store,
    and two worker processes per run are the most expensive server start of the suite."""
    db_url = f"sqlite:///{tmp_path}/workers.db"
    server = LiveServer(db_url, tmp_path, env={"PROMETHEUS_MULTIPROC_DIR": ""}).start(
        "--workers", "2"
    )
    try:
        for i in range(12):  # a new connection each, so both workers take some
            event = run_event(("ns", f"job-{i}"), outputs=[ds("ns", f"out-{i}")])
            assert httpx.post(f"{server.url}/api/v1/lineage", json=event).status_code == 201
        for _ in range(4):
            text = httpx.get(f"{server.url}/metrics").text
            samples = {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }
            assert value(samples, "upstream_events_ingested_total", result="stored") == 12
    finally:
        server.stop()


def test_field_operation_documents_count_as_ingested_events(client: TestClient) -> None:
    document = {
        "destination": {"name": "mytableds"},
        "source": {"name": "user_data"},
        "operations": [
            {"name": "read", "description": "read it", "inputs": ["source"], "outputs": ["body"]}
        ],
        "job": {"name": "ETLMapReduce"},
        "run": {"runId": "6f1c0a52-0a4e-4f8e-9a53-2f1d6f0d8a11"},
    }
    url = "/v3/namespaces/myns/lineage/field-operations"
    assert client.post(url, json=document).status_code == 201
    assert client.post(url, json={**document, "operations": []}).status_code == 422
    samples = scrape(client)
    assert value(samples, "upstream_events_ingested_total", result="stored") == 1
    assert value(samples, "upstream_ingest_rejected_total", reason="invalid") == 1


def test_serve_makes_a_shared_metrics_directory_only_for_several_workers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from upstream.api.metrics import MULTIPROCESS_ENV, multiprocess_directory

    monkeypatch.delenv(MULTIPROCESS_ENV, raising=False)
    with multiprocess_directory(1):
        assert MULTIPROCESS_ENV not in os.environ
    with multiprocess_directory(3):
        made = Path(os.environ[MULTIPROCESS_ENV])
        assert made.is_dir()
        assert not any(made.iterdir())
    assert MULTIPROCESS_ENV not in os.environ
    assert not made.exists()
    monkeypatch.setenv(MULTIPROCESS_ENV, str(tmp_path))
    with multiprocess_directory(3):
        assert os.environ[MULTIPROCESS_ENV] == str(tmp_path)  # the operator's choice is kept
    assert tmp_path.is_dir()


def test_each_series_is_looked_up_once(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A post's request count, latency, events and `sql` statements are four metrics and six
    series: `labels()` checks the labels and takes a lock at each call, so each series is
    looked up at its first use only."""
    body = json.dumps(run_event(("metrics", "once"), outputs=[ds("pg://db", "t")]))
    headers = {"content-type": "application/json"}
    assert client.post("/api/v1/lineage", content=body, headers=headers).status_code == 201
    looked_up: list[tuple[str, ...]] = []
    real = MetricWrapperBase.labels

    def counting(metric: MetricWrapperBase, *labels: str) -> Any:
        looked_up.append(labels)
        return real(metric, *labels)

    monkeypatch.setattr(MetricWrapperBase, "labels", counting)
    assert client.post("/api/v1/lineage", content=body, headers=headers).status_code == 201
    assert looked_up == []
    samples = scrape(client)
    assert value(samples, "upstream_events_ingested_total", result="duplicate") == 1
    route = {"method": "POST", "route": "/api/v1/lineage"}
    assert value(samples, "upstream_http_requests_total", **route, status="201") == 2
