"""The smaller defects of the command line's first minutes (issue 34): run-lineage tables that
split times and names, lineage tables that spent four lines on a relation at 80 columns,
"1 events stored", the run state word, and an error naming an API parameter."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.builders import ds, run_event
from upstream.cli import app
from upstream.commands.ingest import IngestReport
from upstream.render.tables import dataset_lineage_tables, run_lineage_tables

runner = CliRunner()
LOAD = "9ac6c72c-a93c-4402-ab68-d21d417fabc1"
REPORT = "b7722d74-aba9-4934-8cf4-fbcad4886e0b"


def lines(renderable: Any, width: int) -> list[str]:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue().splitlines()


def _run(run_id: str, job: str, level: int, started: str, ended: str) -> dict[str, Any]:
    return {
        "runId": run_id,
        "job": {"namespace": "default", "name": job},
        "state": "COMPLETE",
        "startedAt": started,
        "endedAt": ended,
        "level": level,
    }


RUN_LINEAGE = {
    "runId": REPORT,
    "runs": [
        _run(
            REPORT,
            "EmployeePipe.phase-2",
            0,
            "2026-12-03T17:24:42.617449+00:00",
            "2026-12-03T17:25:42.617449+00:00",
        ),
        _run(
            LOAD,
            "EmployeePipe.phase-1",
            1,
            "2026-12-03T17:22:42.617449+00:00",
            "2026-12-03T17:23:42.617449+00:00",
        ),
    ],
    "datasetVersions": [
        {"id": "v1", "dataset": {"namespace": "default", "name": "Employees"}},
        {
            "id": "v2",
            "dataset": {"namespace": "default", "name": "conn-0.b10742a0-53d8-4d89-bdb2"},
            "writtenBy": LOAD,
        },
    ],
    "edges": [
        {"type": "read", "run": LOAD, "datasetVersion": "v1"},
        {"type": "read", "run": REPORT, "datasetVersion": "v2"},
    ],
}


@pytest.mark.parametrize("width", [100, 80])
def test_run_lineage_never_splits_a_time_or_a_run_id(width: int) -> None:
    text = "\n".join(lines(run_lineage_tables(RUN_LINEAGE), width))
    for when in ("17:24:42", "17:25:42", "17:22:42", "17:23:42"):
        assert when in text
    assert text.count("2026-12-03") == 4
    assert not re.search(r"\d[-:.]\s*│", text), text  # no cell line ends inside a time or id
    assert text.count(LOAD[:8]) == 3  # its row in the runs, its read, the version it wrote
    assert text.count(REPORT[:8]) == 3  # the title, its row, its read


def test_run_lineage_keeps_names_whole_at_100_columns() -> None:
    text = "\n".join(lines(run_lineage_tables(RUN_LINEAGE), 100))
    assert text.count("EmployeePipe.phase-1") == 3
    assert text.count("EmployeePipe.phase-2") == 2
    assert "conn-0.b10742a0-53d8-4d89-bdb2" in text
    assert "Started (UTC)" in text


def test_a_relation_takes_two_lines_at_80_columns() -> None:
    """Name over namespace; no column of dashes for components nobody named."""
    relation = {"accesses": ["write"], "runs": ["b7722d74"], "components": []}
    response = {
        "start": 0,
        "end": 60,
        "relations": [
            {**relation, "data": f"dataset.default.{name}", "program": f"job.default.{job}"}
            for name, job in (("EmpAgg", "EmployeePipe.phase-2"), ("Employees", "phase-1"))
        ],
        "data": {
            f"dataset.default.{n}": {"entityId": {"namespace": "default", "name": n}}
            for n in ("EmpAgg", "Employees")
        },
        "programs": {
            f"job.default.{j}": {"entityId": {"namespace": "default", "name": j}}
            for j in ("EmployeePipe.phase-2", "phase-1")
        },
    }
    printed = lines(dataset_lineage_tables(response, "default", "EmpAgg"), 80)
    body = [line for line in printed if line.startswith("│")]
    assert len(body) == 4
    assert "Components" not in "\n".join(printed)
    assert "EmployeePipe.phase-2" in body[0]


def test_counts_agree_with_their_number() -> None:
    one = IngestReport(files=1, stored=1, rejected=1, malformed=1).summary()
    assert one.startswith("1 event stored from 1 file in ")
    assert "; 1 invalid event refused; 1 unreadable entry" in one
    many = IngestReport(files=2, stored=0, rejected=2, malformed=3).summary()
    assert many.startswith("0 events stored from 2 files in ")
    assert "; 2 invalid events refused; 3 unreadable entries" in many


def test_run_states_are_openlineage_words(tmp_path: Path) -> None:
    """The command line shows a run's state as OpenLineage names it (COMPLETE), in the table
    and in JSON alike; COMPLETED is only the Marquez API's word, kept for its clients."""
    database = tmp_path / "lineage.db"
    events = tmp_path / "events.ndjson"
    run = run_event(("etl", "load"), run_id=LOAD, outputs=[ds("dw", "orders")])
    events.write_text(json.dumps(run) + "\n")
    assert runner.invoke(app, ["ingest", str(events), "--db", str(database)]).exit_code == 0
    table = runner.invoke(app, ["run-lineage", LOAD, "--db", str(database)], terminal_width=100)
    shown = runner.invoke(app, ["run-lineage", LOAD, "--db", str(database), "-f", "json"])
    assert "COMPLETE " in table.stdout
    assert '"state": "COMPLETE"' in shown.stdout
    assert "COMPLETED" not in table.stdout + shown.stdout


def test_deleting_twice_names_no_api_parameter(tmp_path: Path) -> None:
    database = tmp_path / "lineage.db"
    events = tmp_path / "events.ndjson"
    run = run_event(("etl", "load"), outputs=[ds("dw", "orders")])
    events.write_text(json.dumps(run) + "\n")
    assert runner.invoke(app, ["ingest", str(events), "--db", str(database)]).exit_code == 0
    delete = ["delete", "dataset", "dw", "orders", "--db", str(database)]
    assert runner.invoke(app, delete).exit_code == 0
    again = runner.invoke(app, delete)
    assert again.exit_code == 1
    assert again.stderr.strip() == "error: dataset 'orders' in namespace 'dw' was deleted"
