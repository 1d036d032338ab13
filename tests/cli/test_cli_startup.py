"""The command line starts fast because it loads only what a command needs (issue 34):
`upstream --version` and `--help` load the CLI framework and nothing else, a command asking a
server loads no database or ingestion code, and one reading a database no ingestion code.
Each command runs in its own interpreter, which lists the modules it loaded when it exits.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

#: Runs the `upstream` entry point with the arguments given, then writes the names of the
#: modules loaded to the file named first.
_ENTRY = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["upstream", *sys.argv[2:]]
from upstream.cli import main
main()
"""
#: The modules of Upstream itself that `--version` and `--help` may load: the package, its
#: version, the options, and the few plain modules they name.
_STARTUP = {
    "upstream",
    "upstream._version",
    "upstream.cli",
    "upstream.client",
    "upstream.collector",
    "upstream.commands",
    "upstream.commands.state",
}


def _loaded(tmp_path: Path, *args: str, stdin: str = "") -> set[str]:
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", _ENTRY, str(out), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return set(json.loads(out.read_text()))


#: A Typer application of one option and one command, asked for its version and its help:
#: what the framework loads by itself to do that.
_BARE_APP = """
import json, sys, typer
app = typer.Typer()
@app.callback(invoke_without_command=True)
def root(version: bool = typer.Option(False, "--version")) -> None:
    if version:
        raise typer.Exit(0)
@app.command()
def hello(name: str = typer.Option("world", "--name")) -> None:
    print(name)
for args in (["--version"], ["--help"], ["hello", "--help"]):
    try:
        app(args)
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _framework() -> set[str]:
    """The top-level packages the CLI framework (Typer) loads by itself."""
    done = subprocess.run(
        [sys.executable, "-c", _BARE_APP], capture_output=True, text=True, timeout=300, check=True
    )
    return {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


def _third_party(modules: set[str], allowed: set[str]) -> set[str]:
    return {
        name
        for name in modules
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in allowed
        and not name.startswith("upstream")
        and not name.startswith("_")
    }


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["lineage", "--help"],
        ["db", "upgrade", "--help"],
        ["ingest", "-h"],
    ],
    ids=" ".join,
)
def test_version_and_help_load_only_the_framework(tmp_path: Path, args: list[str]) -> None:
    loaded = _loaded(tmp_path, *args)
    assert {name for name in loaded if name.startswith("upstream")} <= _STARTUP
    assert not _third_party(loaded, _framework())


#: What no command that asks a server needs (it builds its question, `query.lineage_query`,
#: and no more of the services): the services, the store, the web application,
#: Kafka, SQL parsing and OpenLineage's client.
_SERVER_SIDE = (
    "upstream.ingest",
    "upstream.query.dataset_lineage",
    "upstream.query.lineage_params",
    "upstream.store.engine",
    "upstream.api",
    "upstream.kafka",
    "fastapi",
    "confluent_kafka",
    "sqlglot",
    "openlineage",
)
#: What no command that reads a database needs.
_WRITE_SIDE = ("upstream.ingest", "upstream.api", "upstream.kafka", "fastapi", "openlineage")
#: What a read of a database at the current schema needs neither: migrations (its schema is
#: checked without them) and an HTTP client.
_MIGRATIONS_AND_HTTP = ("alembic", "upstream.store.migrate", "httpx", "upstream.client.http")


def _any_of(loaded: set[str], prefixes: tuple[str, ...]) -> set[str]:
    return {n for n in loaded if any(n == p or n.startswith(f"{p}.") for p in prefixes)}


def test_commands_asking_a_server_load_no_database_code(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{free_port()}"  # nothing listens: each command fails to connect
    lineage = _loaded(tmp_path, "lineage", "ns", "ds", "--url", server)
    assert "upstream.client.http" in lineage
    assert not _any_of(lineage, _SERVER_SIDE)
    event = '{"eventType": "START"}\n'
    ingest = _loaded(tmp_path, "ingest", "-", "--url", server, stdin=event)
    assert "upstream.commands.sinks" in ingest
    assert not _any_of(ingest, _SERVER_SIDE)


def test_commands_reading_a_database_load_no_ingestion(tmp_path: Path) -> None:
    database = tmp_path / "lineage.db"
    _loaded(tmp_path, "db", "upgrade", "--db", str(database))
    assert database.is_file()
    lineage = _loaded(tmp_path, "lineage", "ns", "ds", "--db", str(database))
    assert "upstream.query.dataset_lineage" in lineage
    assert not _any_of(lineage, _WRITE_SIDE)
    assert not _any_of(lineage, _MIGRATIONS_AND_HTTP)


#: What a server starting on a store at the head needs neither: Alembic with the template and
#: highlighting libraries it loads (the schema is checked without them), and HTTPX, which only
#: a webhook's delivery uses. Together a fifth of the CPU of a start.
_MIGRATIONS_AND_DELIVERY = ("alembic", "mako", "pygments", "httpx")


def test_a_server_on_a_store_at_the_head_loads_no_migrations_and_no_http_client(
    tmp_path: Path, sqlite_template: Path
) -> None:
    database = tmp_path / "lineage.db"
    shutil.copy(sqlite_template, database)
    out, port = tmp_path / "modules.json", free_port()
    args = ["serve", "--db", f"sqlite:///{database}", "--port", str(port)]
    server = subprocess.Popen(
        [sys.executable, "-c", _ENTRY, str(out), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            pytest.fail("the server did not get ready")
    finally:
        # On Ctrl+C uvicorn stops cleanly and raises it again, so the interpreter exits
        # through its exit handlers (a SIGTERM raised again ends it without them).
        server.send_signal(signal.SIGINT)
        server.wait(60)
    loaded = set(json.loads(out.read_text()))
    assert "upstream.api.app" in loaded
    assert not _any_of(loaded, _MIGRATIONS_AND_DELIVERY)
