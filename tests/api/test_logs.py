"""Logs: one JSON object (or text line) per record, each request's lines tagged with its id."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.builders import run_event
from upstream.api.app import create_app
from upstream.logs import (
    JsonFormatter,
    TextFormatter,
    _StderrHandler,
    configure_logging,
    request_id_var,
)
from upstream.settings import Settings


@pytest.fixture
def app_client(settings: Settings, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """The app with the log format the test asks for (json unless parametrised)."""
    log_format = getattr(request, "param", "json")
    configured = settings.model_copy(update={"log_format": log_format})
    with TestClient(create_app(configured, migrate=False)) as client:
        yield client


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_each_request_gets_an_id_echoed_and_logged(
    app_client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    first = app_client.get("/health")
    second = app_client.get("/health")
    first_id, second_id = first.headers["X-Request-ID"], second.headers["X-Request-ID"]
    assert len(first_id) == 32
    assert first_id != second_id
    records = [json.loads(line) for line in _lines(capsys)]
    access = [r for r in records if r["logger"] == "upstream.access"]
    assert [(r["request_id"], r["path"], r["status"], r["method"]) for r in access] == [
        (first_id, "/health", 200, "GET"),
        (second_id, "/health", 200, "GET"),
    ]
    assert all(r["level"] == "info" and r["duration_ms"] >= 0 for r in access)
    assert access[0]["message"] == "GET /health 200"


def test_a_sane_incoming_request_id_is_kept(app_client: TestClient) -> None:
    response = app_client.get("/health", headers={"X-Request-ID": "lb-7f3a:42"})
    assert response.headers["X-Request-ID"] == "lb-7f3a:42"


@pytest.mark.parametrize("incoming", ["", "x" * 129, "bad id with spaces", "evil\u2028line"])
def test_an_unsafe_incoming_request_id_is_replaced(app_client: TestClient, incoming: str) -> None:
    response = app_client.get("/health", headers=[(b"X-Request-ID", incoming.encode())])
    echoed = response.headers["X-Request-ID"]
    assert echoed != incoming
    assert len(echoed) == 32


def test_error_responses_carry_the_id_and_are_logged(
    app_client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    response = app_client.post("/api/v1/lineage", json=run_event(("ns", "j"), run_id="nope"))
    assert response.status_code == 422
    records = [json.loads(line) for line in _lines(capsys)]
    (access,) = [r for r in records if r["logger"] == "upstream.access"]
    assert access["request_id"] == response.headers["X-Request-ID"]
    assert access["status"] == 422


@pytest.mark.parametrize("app_client", ["text"], indirect=True)
def test_text_format_is_one_readable_line(
    app_client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    response = app_client.get("/health")
    request_id = response.headers["X-Request-ID"]
    (line,) = [line for line in _lines(capsys) if "upstream.access" in line]
    assert f"upstream.access [{request_id}] GET /health 200 duration_ms=" in line
    assert " INFO " in line
    assert "method=" not in line  # already said by the message
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def _record(message: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("upstream.test", logging.WARNING, __file__, 1, message, (), None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_formatter_fields_extras_and_exceptions() -> None:
    record = _record("stored %s", request_id="abc", batch=3)
    record.args = ("ok",)
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "stored ok"
    assert entry["level"] == "warning"
    assert entry["logger"] == "upstream.test"
    assert entry["request_id"] == "abc"
    assert entry["batch"] == 3
    assert entry["time"].endswith("+00:00")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = _record("failed")
        failed.exc_info = sys.exc_info()
    assert "RuntimeError: boom" in json.loads(JsonFormatter().format(failed))["exception"]


def test_text_formatter_without_request_id() -> None:
    line = TextFormatter().format(_record("hello", request_id=None))
    assert line.endswith(" WARNING upstream.test hello")


def test_records_outside_requests_have_no_id(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(Settings(log_format="json"))
    capsys.readouterr()
    assert request_id_var.get() is None
    logging.getLogger("upstream.test").warning("outside")
    (line,) = _lines(capsys)
    assert "request_id" not in json.loads(line)


def test_configure_is_idempotent_and_sets_the_level() -> None:
    configure_logging(Settings(log_level="warning"))
    configure_logging(Settings(log_level="debug"))
    ours = [h for h in logging.getLogger().handlers if isinstance(h, _StderrHandler)]
    assert len(ours) == 1
    assert logging.getLogger("upstream").level == logging.DEBUG
    assert logging.getLogger("uvicorn.access").disabled
    configure_logging(Settings())
    assert logging.getLogger("upstream").level == logging.INFO


def test_uvicorns_coloured_copy_of_the_message_is_left_out() -> None:
    record = _record("Started server process [%d]", color_message="\x1b[36m%d\x1b[0m")
    record.args = (7,)
    assert "color_message" not in json.loads(JsonFormatter().format(record))
    assert "\x1b" not in TextFormatter().format(record)


def test_other_libraries_info_lines_stay_out(capsys: pytest.CaptureFixture[str]) -> None:
    """Configuring the server's logs must not turn on every library's INFO chatter (httpx logs
    one line per request, which would land on a CLI's stderr)."""
    root_level = logging.getLogger().level
    configure_logging(Settings(log_level="debug"))
    capsys.readouterr()
    logging.getLogger("httpx").info("HTTP Request: GET http://example")
    logging.getLogger("upstream.test").debug("ours")
    assert [json.loads(line)["message"] for line in _lines(capsys)] == ["ours"]
    assert logging.getLogger().level == root_level
    configure_logging(Settings())
