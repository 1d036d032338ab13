"""`/health` (liveness) and `/ready` (database answers, migrations current) for probes."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from upstream import __version__
from upstream.api.app import create_app
from upstream.settings import Settings


def test_health_names_version_and_store(client: TestClient, settings: Settings) -> None:
    body = client.get("/health").json()
    expected_store = "sqlite" if settings.db_url.startswith("sqlite") else "postgresql"
    assert body["status"] == "ok"
    assert body["version"] == __version__
    assert body["store"] == expected_store


def test_ready_on_a_migrated_database(client: TestClient) -> None:
    response = client.get("/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_not_ready_while_migrations_are_pending(tmp_path: Path) -> None:
    settings = Settings(db_url=f"sqlite:///{tmp_path}/empty.db")
    with TestClient(create_app(settings, migrate=False)) as client:
        assert client.get("/health").status_code == 200  # alive all the same
        response = client.get("/ready")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "migrations pending"}


def test_not_ready_when_the_database_does_not_answer() -> None:
    # Port 9 (discard) on loopback: nothing listens there, the connection is refused.
    settings = Settings(db_url="postgresql+psycopg://nobody@127.0.0.1:9/none?connect_timeout=2")
    with TestClient(create_app(settings, migrate=False)) as client:
        response = client.get("/ready")
    assert response.status_code == 503
    # Open to anyone, so it says what is wrong without the database's address or error text.
    assert response.json() == {"status": "unavailable", "reason": "the database does not answer"}
