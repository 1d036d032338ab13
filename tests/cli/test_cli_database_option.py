"""`--db` (and UPSTREAM_DB_URL) take a plain file path as SQLite, on every command that has the
option; a value that is neither a path nor a database URL is one line naming the accepted
forms, never a traceback (`upstream.store.database_url`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from upstream.cli import app
from upstream.settings import SettingsError, load_settings
from upstream.store.database_url import ACCEPTED_FORMS, database_url

runner = CliRunner()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("lineage.db", "sqlite:///lineage.db"),
        ("./data/lineage.db", "sqlite:///data/lineage.db"),
        ("/var/lib/upstream/lineage.db", "sqlite:////var/lib/upstream/lineage.db"),
        ("C:\\lineage.db", "sqlite:///C:\\lineage.db"),
        ("sqlite:///lineage.db", "sqlite:///lineage.db"),
        ("sqlite://", "sqlite://"),
        ("postgresql+psycopg://u@h:5432/d", "postgresql+psycopg://u@h:5432/d"),
        ("postgresql://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgres://u:secret@h/d", "postgresql+psycopg://u:secret@h/d"),
    ],
)
def test_a_path_is_sqlite_and_a_url_is_kept(given: str, expected: str) -> None:
    assert database_url(given) == expected


def test_a_home_path_is_expanded() -> None:
    assert database_url("~/lineage.db") == f"sqlite:///{Path.home() / 'lineage.db'}"


@pytest.mark.parametrize("given", ["sqlite:/x.db", "mysql://h/d", "http://h:5000", "", "  "])
def test_anything_else_names_the_accepted_forms(given: str) -> None:
    with pytest.raises(ValueError, match="sqlite:///path") as caught:
        database_url(given)
    assert ACCEPTED_FORMS in str(caught.value)


def test_the_setting_reads_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_DB_URL", "lineage.db")
    assert load_settings().db_url == "sqlite:///lineage.db"
    monkeypatch.setenv("UPSTREAM_DB_URL", "mysql://h/d")
    with pytest.raises(SettingsError, match=r"UPSTREAM_DB_URL: .*a file path"):
        load_settings()


def _commands_with_db() -> list[list[str]]:
    """The path of every command that has a `--db` option, found in the app itself so that
    a new command cannot be missed."""
    found: list[list[str]] = []

    def visit(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                visit(sub, [*path, name])
        elif any("--db" in getattr(p, "opts", ()) for p in command.params):
            found.append(path)

    visit(typer.main.get_command(app), [])
    return found


COMMANDS = _commands_with_db()


def test_the_commands_with_db_are_found() -> None:
    assert {"serve", "ingest", "lineage", "diff", "run-lineage", "export", "demo"} <= {
        p[0] for p in COMMANDS
    }
    assert ["db", "upgrade"] in COMMANDS
    assert ["db", "prune"] in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_says_a_file_path_is_sqlite(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "a file path (SQLite)" in " ".join(result.output.split())


#: Arguments that make each command get as far as reading its options.
_ARGUMENTS = {
    "ingest": ["-"],
    "lineage": ["ns", "ds"],
    "diff": ["ns", "ds"],
    "run-lineage": ["0b5f3a43-8b8a-4d23-a5c4-6d3d4e3f0f11"],
    "field-lineage": ["ns", "ds", "f"],
    "dataset": ["ns", "ds"],
    "job": ["ns", "job"],
    "namespace": ["ns"],
    "prune": ["--before", "now-90d"],
}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_bad_url_is_one_line_naming_the_forms(command: list[str]) -> None:
    args = [*command, *_ARGUMENTS.get(command[-1], []), "--db", "postgresql:/nohost"]
    done = subprocess.run(
        [sys.executable, "-m", "upstream", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: --db: cannot read 'postgresql:/nohost' as a database; give {ACCEPTED_FORMS}"
    ]


def test_ingest_and_lineage_take_a_file_path(tmp_path: Path) -> None:
    events = tmp_path / "events.ndjson"
    event = run_event(("etl", "load"), inputs=[ds("raw", "orders")], outputs=[ds("dw", "orders")])
    events.write_text(httpx.Response(200, json=event).text + "\n")
    database = tmp_path / "lineage.db"
    stored = runner.invoke(app, ["ingest", str(events), "--db", str(database)])
    assert stored.exit_code == 0, stored.output
    assert database.is_file()
    shown = runner.invoke(
        app, ["lineage", "dw", "orders", "--db", str(database), "--start", "0", "-f", "json"]
    )
    assert shown.exit_code == 0, shown.output
    assert '"program": "job.etl.load"' in shown.output


def test_serve_takes_a_file_path(tmp_path: Path) -> None:
    """What `--help` invites, `serve --db ./file.db`, starts the server on that file."""
    database = tmp_path / "file.db"
    server = LiveServer(str(database), tmp_path).start()
    try:
        health = httpx.get(f"{server.url}/health", timeout=5)
    finally:
        server.stop()
    assert health.status_code == 200
    assert f"serving sqlite:///{database}" in server.log()
    assert database.is_file()
