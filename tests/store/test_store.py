"""The store: migrations on start, SQLite pragmas, health, the CLI's database commands."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import run_event
from tests.readback import counts
from upstream.cli import app as cli_app
from upstream.ingest.service import ingest_documents
from upstream.model.json_text import dumps
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.event_log import events_after
from upstream.store.migrate import current_revision, head_revision, upgrade
from upstream.store.schema_revision import is_current


def test_migrations_are_at_head_and_idempotent(store: Store) -> None:
    assert is_current(store)
    upgrade(store)  # again: nothing to do, nothing breaks
    assert current_revision(store) == head_revision()


def test_sqlite_pragmas(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'x.db'}")
    with store.read() as conn:
        pragmas = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "foreign_keys", "synchronous")
        }
    store.dispose()
    assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "synchronous": 2}


def test_a_large_payload_reads_back_as_stored_and_sessions_compress_with_lz4(
    store: Store,
) -> None:
    """An event well past what PostgreSQL keeps inline reads back as stored (the store keeps
    it compressed by zstd, `store.payloads`); PostgreSQL's sessions compress the other large
    values they store out of line with LZ4 where the server has it (a setting of each
    connection, made once it opens)."""
    event = run_event(("ns", "compressed"))
    event["run"]["facets"]["notes"] = {
        "text": "an event well past the 2 kB PostgreSQL keeps inline " * 200
    }
    ingest_documents(store, [event], batch=False)
    with store.read() as conn:
        [stored] = events_after(conn, 0, 10)
        assert stored.payload == dumps(event)
        if store.dialect == "postgresql":
            lz4 = conn.exec_driver_sql(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                "WHERE name = 'default_toast_compression'"
            ).scalar()
            method = conn.exec_driver_sql("SHOW default_toast_compression").scalar()
            assert method == ("lz4" if lz4 else "pglz")


def test_write_transactions_roll_back_on_error(store: Store) -> None:
    ingest_documents(store, [run_event(("ns", "job"))], batch=False)
    before = counts(store)

    def failing(conn: sa.Connection) -> None:
        conn.execute(sa.text("DELETE FROM relations"))
        conn.execute(sa.text("DELETE FROM events"))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        store.write(failing)
    assert counts(store) == before
    assert before["events"] == 1


def test_health_names_version_and_store(client: TestClient, db_url: str) -> None:
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["version"]
    assert body["store"] == ("sqlite" if db_url.startswith("sqlite") else "postgresql")


def test_db_upgrade_command_creates_a_fresh_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    result = CliRunner().invoke(cli_app, ["db", "upgrade", "--db", url])
    assert result.exit_code == 0, result.output
    assert head_revision() in result.output
    store = Store(url)
    assert is_current(store)
    store.dispose()


def test_serve_refuses_invalid_settings(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli_app, ["serve", "--port", "99999", "--db", f"sqlite:///{tmp_path / 'x.db'}"]
    )
    assert result.exit_code == 1
    assert "UPSTREAM_PORT" in result.output


def test_timestamps_come_back_aware_in_utc(store: Store) -> None:
    """Written with an offset or none, an instant reads back as the same instant in UTC."""
    ns = uuid.uuid4()
    written = datetime(2024, 3, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2024, 3, 1, 9, 15)

    def insert(conn: sa.Connection) -> None:
        row = {"id": ns, "name": "n", "created_at": written, "updated_at": naive}
        conn.execute(t.namespaces.insert().values(row))

    store.write(insert)
    with store.read() as conn:
        row = conn.execute(sa.select(t.namespaces).where(t.namespaces.c.id == ns)).one()
        # A bound time is compared in UTC too: 12:30Z is after 12:00Z, before 13:00Z.
        later = t.namespaces.c.created_at > datetime(2024, 3, 1, 13, 0, tzinfo=UTC)
        after_noon = conn.execute(sa.select(t.namespaces.c.id).where(later)).first()
    assert row.created_at == datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    assert row.created_at.tzinfo is UTC
    assert row.updated_at == datetime(2024, 3, 1, 9, 15, tzinfo=UTC)
    assert row.updated_at.tzinfo is UTC
    assert after_noon is None
