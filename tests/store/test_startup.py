"""`upstream serve` as a person starting it sees it: every startup failure is one line on
stderr that says what to do (exit status 1, nothing started), and the log is text with
colours at a terminal, JSON lines otherwise (design §5)."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from upstream.logs import JsonFormatter, TextFormatter, formatter_for

ANSI = "\x1b["


def _environment(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("UPSTREAM_", "NO_COLOR"))}
    return {**clean, **extra}


def _serve(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "upstream", "serve", *args],
        env=_environment(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_port_in_use_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_line(_serve("--db", f"sqlite:///{tmp_path}/x.db", "--port", str(port)))
    assert line == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is already in use; stop what is "
        "using it (another `upstream serve`?) or choose another port with --port (or "
        "UPSTREAM_PORT)"
    )
    assert not (tmp_path / "x.db").exists()  # refused before the database was touched


def test_an_address_the_machine_does_not_have_is_one_line(tmp_path: Path) -> None:
    line = _one_line(_serve("--db", f"sqlite:///{tmp_path}/x.db", "--host", "192.0.2.1"))
    assert line == (
        "error: cannot listen on 192.0.2.1:5000: this machine has no such address; check "
        "--host (or UPSTREAM_HOST)"
    )


def test_an_unreachable_database_is_one_line_saying_what_to_do() -> None:
    port = free_port()  # nothing listens there
    line = _one_line(_serve("--db", f"postgresql+psycopg://postgres@127.0.0.1:{port}/x"))
    assert line.startswith(
        f"error: cannot prepare the database postgresql+psycopg://postgres@127.0.0.1:{port}/x: "
    )
    assert "Connection refused" in line
    assert line.endswith(
        "; check that the database is running and reachable, and that --db (or "
        "UPSTREAM_DB_URL) names it"
    )


def test_a_bad_setting_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    line = _one_line(_serve("--db", f"sqlite:///{tmp_path}/x.db", UPSTREAM_LOG_LEVEL="loud"))
    assert line.startswith("error: invalid setting: UPSTREAM_LOG_LEVEL: ")
    assert line.endswith("(fix it in the environment or the config file)")


def _record(level: int) -> logging.LogRecord:
    return logging.LogRecord("upstream.test", level, __file__, 1, "disk %s", ("full",), None)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_is_coloured_text_at_a_terminal_and_json_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    at_terminal = formatter_for("auto", _Terminal())
    assert isinstance(at_terminal, TextFormatter)
    line = at_terminal.format(_record(logging.ERROR))
    assert "\x1b[31m\x1b[1mERROR  \x1b[0m" in line  # red, bold
    assert line.endswith(" disk full")
    assert isinstance(formatter_for("auto", io.StringIO()), JsonFormatter)
    assert isinstance(formatter_for("json", _Terminal()), JsonFormatter)
    plain = formatter_for("text", io.StringIO()).format(_record(logging.WARNING))
    assert ANSI not in plain  # colours only for a terminal
    assert " WARNING upstream.test disk full" in plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert ANSI not in formatter_for("auto", _Terminal()).format(_record(logging.ERROR))


def _read_until(fd: int, marker: str, seconds: float) -> str:
    seen = b""
    deadline = time.monotonic() + seconds
    while marker.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the terminal closed: the server exited
                break
    return seen.decode("utf-8", "replace")


@pytest.mark.slow
def test_serve_at_a_terminal_logs_coloured_text_and_json_in_a_pipe(tmp_path: Path) -> None:
    port = free_port()
    command = [
        sys.executable, "-m", "upstream", "serve",
        "--db", f"sqlite:///{tmp_path}/x.db", "--port", str(port),
    ]  # fmt: skip
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        command, stdin=terminal, stdout=terminal, stderr=terminal, env=_environment()
    )
    os.close(terminal)
    try:
        output = _read_until(controller, "Application startup complete", 90)
    finally:
        process.terminate()
        process.wait(30)
        os.close(controller)
    lines = [line for line in output.splitlines() if line.strip()]
    assert any("Application startup complete" in line for line in lines), output
    assert all(not line.lstrip().startswith("{") for line in lines), output
    assert f"{ANSI}32mINFO   {ANSI}0m" in output  # green INFO
    assert f"listening on http://127.0.0.1:{port}" in output

    piped = subprocess.Popen(
        [*command[:-1], str(free_port())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_environment(),
    )
    try:
        assert piped.stderr is not None
        first = json.loads(piped.stderr.readline())
        assert first["level"] == "info"
        assert first["message"].startswith("listening on http://127.0.0.1:")
    finally:
        piped.terminate()
        piped.wait(30)
