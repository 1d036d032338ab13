"""An empty window over a dataset with history says so (issue 34): the dataset-lineage answer
carries `latestRunOutsideWindow`, the start of the latest run of any job reading or writing
the dataset, when every such run lies outside the window; `upstream lineage` prints one line
naming the window that shows it, and still exits 0.

The history: `load` writes dw.orders from raw.orders on 1 October (10:00 to 11:00), `report`
reads dw.orders on 5 October (08:00 to 09:00).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import ds, run_event
from upstream.cli import app
from upstream.commands.window_hint import window_hint

LOAD_START = datetime(2026, 10, 1, 10, tzinfo=UTC)
REPORT_START = datetime(2026, 10, 5, 8, tzinfo=UTC)
ORDERS = "/v3/namespaces/dw/datasets/orders/lineage"
NOVEMBER = {"start": "2026-11-01T00:00:00Z", "end": "2026-11-08T00:00:00Z"}


def _run(job: str, start: datetime, **io: Any) -> list[dict[str, Any]]:
    run_id = "00000000-0000-4000-8000-0000000000" + ("01" if job == "load" else "02")
    return [
        run_event(("etl", job), run_id=run_id, event_type=kind, time=at, **io)
        for kind, at in (("START", start), ("COMPLETE", start.replace(hour=start.hour + 1)))
    ]


@pytest.fixture
def history(client: TestClient) -> None:
    events = [
        *_run("load", LOAD_START, inputs=[ds("raw", "orders")], outputs=[ds("dw", "orders")]),
        *_run("report", REPORT_START, inputs=[ds("dw", "orders")], outputs=[ds("bi", "dash")]),
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201


def _lineage(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get(ORDERS, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_window_after_every_run_names_the_latest(client: TestClient, history: None) -> None:
    body = _lineage(client, **NOVEMBER)
    assert body["relations"] == []
    assert body["latestRunOutsideWindow"] == REPORT_START.isoformat()


def test_a_window_before_every_run_names_the_latest(client: TestClient, history: None) -> None:
    body = _lineage(client, start="2026-09-01T00:00:00Z", end="2026-09-10T00:00:00Z")
    assert body["latestRunOutsideWindow"] == REPORT_START.isoformat()


def test_a_window_showing_lineage_has_no_hint(client: TestClient, history: None) -> None:
    body = _lineage(client, start="2026-10-01T00:00:00Z", end="2026-10-02T00:00:00Z")
    assert [r["program"] for r in body["relations"]] == ["job.etl.load", "job.etl.load"]
    assert "latestRunOutsideWindow" not in body


def test_no_hint_when_the_direction_hides_a_run_inside_the_window(
    client: TestClient, history: None
) -> None:
    """`report` read dw.orders inside this window: nothing is downstream of bi.dash, and the
    window is not what hides it."""
    response = client.get(
        "/v3/namespaces/bi/datasets/dash/lineage",
        params={"start": "2026-10-05T00:00:00Z", "end": "2026-10-06T00:00:00Z"}
        | {"direction": "downstream"},
    )
    assert response.json()["relations"] == []
    assert "latestRunOutsideWindow" not in response.json()


def test_as_of_counts_only_runs_started_by_then(client: TestClient, history: None) -> None:
    """As of 4 October, `report` had not run: the latest run then was `load`'s."""
    body = _lineage(client, asOf="2026-10-04T00:00:00Z", start="now-12h")
    assert body["relations"] == []
    assert body["latestRunOutsideWindow"] == LOAD_START.isoformat()


def test_runs_of_deleted_jobs_are_not_history(client: TestClient, history: None) -> None:
    assert client.delete("/api/v1/namespaces/etl/jobs/report").status_code == 200
    assert _lineage(client, **NOVEMBER)["latestRunOutsideWindow"] == LOAD_START.isoformat()
    assert client.delete("/api/v1/namespaces/etl/jobs/load").status_code == 200
    assert "latestRunOutsideWindow" not in _lineage(client, **NOVEMBER)


runner = CliRunner()


def test_the_cli_names_the_window_to_use(db_url: str, history: None) -> None:
    window = ["--start", NOVEMBER["start"], "--end", NOVEMBER["end"]]
    result = runner.invoke(app, ["lineage", "dw", "orders", *window, "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "0 relations, 1 dataset, 0 programs" in result.stdout
    assert result.stderr.splitlines()[-1] == (
        "no lineage of dw / orders in this window; its latest run started "
        "2026-10-05T08:00:00Z: use --start 2026-10-05T08:00:00Z to see it"
    )
    shown = runner.invoke(
        app,
        [
            "lineage",
            "dw",
            "orders",
            "--start",
            "2026-10-05T08:00:00Z",
            "--end",
            NOVEMBER["end"],
            "--db",
            db_url,
            "-f",
            "json",
        ],
    )
    assert shown.exit_code == 0, shown.output
    assert '"program": "job.etl.report"' in shown.stdout
    assert "no lineage" not in shown.stderr


def test_a_run_after_the_window_moves_its_end() -> None:
    answer = {
        "start": int(datetime(2026, 9, 1, tzinfo=UTC).timestamp()),
        "end": int(datetime(2026, 9, 10, tzinfo=UTC).timestamp()),
        "relations": [],
        "latestRunOutsideWindow": "2026-10-05T08:00:00.250000+00:00",
    }
    assert window_hint(answer, "dw", "orders") == (
        "no lineage of dw / orders in this window; its latest run started "
        "2026-10-05T08:00:00Z: use --end 2026-10-05T08:00:01Z to see it"
    )
    assert window_hint({**answer, "latestRunOutsideWindow": None}, "dw", "orders") is None
