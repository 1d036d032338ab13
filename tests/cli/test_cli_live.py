"""Every CLI command against a real `upstream serve` process (one per database, shared by
the steps, since starting a server is the slow part): ingest in-process and as a real
subprocess, demo, then each read command answering exactly what the database answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.cli.test_cli_demo import EMP_ROLLED_UP, WAREHOUSE
from tests.cli.test_cli_ingest import event, stored_numbers, write_ndjson
from tests.cli.test_cli_lineage import own_lines
from tests.conftest import LiveServer
from upstream.cli import app
from upstream.store.engine import Store

runner = CliRunner()


def json_of(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ingest_into(server: LiveServer, store: Store, tmp_path: Path) -> None:
    lines: list[Any] = [event(n) for n in range(1, 11)]
    lines[3]["run"]["runId"] = "not-a-uuid"
    lines[7] = "{broken"
    troubled = write_ndjson(tmp_path / "events.ndjson", lines)
    result = runner.invoke(
        app,
        ["ingest", str(troubled), "--url", server.url, "--on-error", "skip", "--batch-size", "4"],
    )
    assert result.exit_code == 1
    assert stored_numbers(store) == {1, 2, 3, 5, 6, 7, 9, 10}
    assert f"{troubled}:4: run.runId: " in result.stderr
    assert f"{troubled}:8: malformed JSON" in result.stderr

    more = write_ndjson(tmp_path / "more.ndjson", [event(n) for n in range(11, 21)])
    done = subprocess.run(
        [sys.executable, "-m", "upstream", "ingest", str(more), "--url", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("10 events stored from 1 file in ")
    assert stored_numbers(store) == {1, 2, 3, 5, 6, 7, 9, 10, *range(11, 21)}


def test_every_command_against_a_live_server(
    live_server: LiveServer, db_url: str, store: Store, tmp_path: Path
) -> None:
    ingest_into(live_server, store, tmp_path)

    loaded = runner.invoke(app, ["demo", "--url", live_server.url])
    assert loaded.exit_code == 0, loaded.output
    assert f"--url {live_server.url}" in loaded.stdout
    paths_url = f"{live_server.url}/v3/namespaces/myns/datasets/mytableds/fields/uniqueId/lineage"
    assert paths_url in loaded.stdout

    queries = [
        ["lineage", "default", "EmpAgg", *EMP_ROLLED_UP],
        ["lineage", WAREHOUSE, "analytics.customer_summary", "--direction", "upstream"],
        ["field-lineage", "myns", "mytableds", "uniqueId", "--paths"],
        ["field-lineage", "myns", "user_data", "body", "--direction", "outgoing", "--levels", "2"],
        ["export"],
        ["export", "default", "EmpAgg", "--levels", "2"],
    ]
    for query in queries:
        from_server = json_of(*query, "--url", live_server.url, "-f", "json")
        from_database = json_of(*query, "--db", db_url, "-f", "json")
        for times in (("start", "end"), ("startTimeInSeconds", "endTimeInSeconds")):
            for key in times:  # the default window ends "now": the two calls are moments apart
                if key in from_server:
                    assert abs(from_server.pop(key) - from_database.pop(key)) <= 60
        assert from_server == from_database, query

    for output_format in ("table", "dot", "mermaid"):
        drawn = runner.invoke(
            app, ["lineage", "default", "EmpAgg", "--url", live_server.url, "-f", output_format]
        )
        assert drawn.exit_code == 0, drawn.output
        assert "EmpAgg" in drawn.stdout

    unknown = runner.invoke(app, ["lineage", "default", "nothing", "--url", live_server.url])
    assert unknown.exit_code == 1
    assert own_lines(unknown.stderr) == [
        "error: dataset 'nothing' not found in namespace 'default' (HTTP 404)"
    ]
    garbled = runner.invoke(
        app, ["lineage", "default", "EmpAgg", "--start", "soon", "--url", live_server.url]
    )
    assert garbled.exit_code == 2
    assert "start" in garbled.stderr
