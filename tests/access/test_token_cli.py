"""`upstream token create|list|revoke` (design §5) on a database and on a server, and the
command line asking a server with a scoped token (`--url`) gets the filtered answer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tests.access.estate import ADMIN, SETTINGS_TOKENS, WRITE_ALL, bearer, estate_events
from tests.conftest import LiveServer
from upstream.cli import app

runner = CliRunner()


def test_tokens_are_issued_listed_and_revoked_in_a_database(tmp_path: Path) -> None:
    db = str(tmp_path / "lineage.db")
    created = runner.invoke(
        app, ["token", "create", "finance", "--scope", "read:finance/*", "--db", db]
    )
    assert created.exit_code == 0, created.output
    token = json.loads(created.output)
    assert token["scopes"] == ["read:finance/*"]
    assert token["token"].startswith("upt_")
    listed = runner.invoke(app, ["token", "list", "--db", db])
    assert listed.exit_code == 0
    (entry,) = json.loads(listed.output)
    assert entry["id"] == token["id"]
    assert token["token"] not in listed.output
    revoked = runner.invoke(app, ["token", "revoke", token["id"], "--db", db])
    assert revoked.exit_code == 0
    assert json.loads(revoked.output)["revokedAt"] is not None


def test_bad_scopes_and_expiries_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    db = str(tmp_path / "lineage.db")
    scope = runner.invoke(app, ["token", "create", "x", "--scope", "read:a*b", "--db", db])
    assert scope.exit_code == 1
    assert "scopes[0]: a namespace pattern may hold `*` only as its last" in scope.output
    past = runner.invoke(
        app, ["token", "create", "x", "--scope", "read:*", "--expires", "now-1d", "--db", db]
    )
    assert past.exit_code == 1
    assert "expiresAt" in past.output
    garbled = runner.invoke(
        app, ["token", "create", "x", "--scope", "read:*", "--expires", "soon", "--db", db]
    )
    assert garbled.exit_code == 2
    assert "--expires" in garbled.output
    assert json.loads(runner.invoke(app, ["token", "list", "--db", db]).output) == []


def test_the_command_line_issues_tokens_on_a_server_and_reads_through_one(
    tmp_path: Path, sqlite_template: Path
) -> None:
    import shutil

    db = tmp_path / "served.db"
    shutil.copy(sqlite_template, db)
    server = LiveServer(f"sqlite:///{db}", tmp_path, env={"UPSTREAM_TOKENS": SETTINGS_TOKENS})
    server.start()
    try:
        posted = httpx.post(
            f"{server.url}/api/v1/lineage", json=estate_events(), headers=bearer(WRITE_ALL)
        )
        assert posted.status_code == 201
        target = ["--url", server.url, "--token", ADMIN]
        created = runner.invoke(
            app, ["token", "create", "finance", "--scope", "read:finance/*", *target]
        )
        assert created.exit_code == 0, created.output
        finance = json.loads(created.output)["token"]
        reader = ["--url", server.url, "--token", finance, "--start", "0", "--format", "json"]
        shown = runner.invoke(app, ["lineage", "finance/warehouse", "invoices", *reader])
        assert shown.exit_code == 0, shown.output
        answer = json.loads(shown.output)
        assert answer["hiddenNodes"] == 3
        assert "crm" not in shown.output
        hidden = runner.invoke(app, ["lineage", "hr", "salaries", *reader])
        assert hidden.exit_code == 1
        assert "namespace 'hr' not found" in hidden.output
        refused = runner.invoke(
            app,
            ["token", "create", "x", "--scope", "admin", "--url", server.url, "--token", finance],
        )
        assert refused.exit_code == 1
        assert "HTTP 403" in refused.output
    finally:
        server.stop()
