"""Every answer can be traced (design §5): a 500 carries `X-Request-ID` like any other answer
and its logged traceback carries the same id; a client that hangs up mid-upload is logged at
INFO and counted as `client_disconnected`, never as a server error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.api.test_metrics import scrape, value
from upstream.api.app import create_app
from upstream.settings import Settings


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    app = create_app(settings.model_copy(update={"log_format": "json"}), migrate=False)

    @app.get("/test-only/bug")
    def bug() -> None:
        raise RuntimeError("a bug for the test")

    return app


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def _records(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_a_500_carries_the_request_id_and_so_does_its_traceback(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    response = client.get("/test-only/bug", headers={"X-Request-ID": "trace-me-42"})
    assert response.status_code == 500
    assert response.json() == {"code": 500, "message": "internal server error"}
    assert response.headers["X-Request-ID"] == "trace-me-42"
    records = _records(capsys)
    (failure,) = [r for r in records if r["level"] == "error"]
    assert failure["message"] == "unhandled error on GET /test-only/bug"
    assert failure["request_id"] == "trace-me-42"
    assert "RuntimeError: a bug for the test" in failure["exception"]
    (access,) = [r for r in records if r["logger"] == "upstream.access"]
    assert (access["request_id"], access["status"]) == ("trace-me-42", 500)
    samples = scrape(client)
    assert (
        value(
            samples,
            "upstream_http_requests_total",
            method="GET",
            route="/test-only/bug",
            status="500",
        )
        == 1
    )


def test_a_client_that_hangs_up_mid_upload_is_no_server_error(
    app: FastAPI, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    messages = [
        {"type": "http.request", "body": b'[{"eventType": "START", ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/v1/lineage",
        "raw_path": b"/api/v1/lineage",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"5000")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    assert client.portal is not None
    client.portal.call(app, scope, receive, send)
    records = _records(capsys)
    assert [r for r in records if r["level"] in ("error", "warning")] == []
    (left,) = [r for r in records if r["logger"] == "upstream.api"]
    assert (left["level"], left["message"]) == (
        "info",
        "client disconnected during POST /api/v1/lineage",
    )
    samples = scrape(client)
    assert value(samples, "upstream_ingest_rejected_total", reason="client_disconnected") == 1
    assert value(samples, "upstream_ingest_rejected_total", reason="server_error") == 0
    assert (
        value(
            samples,
            "upstream_http_requests_total",
            method="POST",
            route="/api/v1/lineage",
            status="499",
        )
        == 1
    )
