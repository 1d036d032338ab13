"""The schema check of a read (`upstream.store.schema_revision`): a current store is known
current from the version table and the migration files alone, without Alembic; an older one
is refused with the message Alembic's check gave, on both stores. A migration (`upgrade`)
loads no migration module for a current store, each once for one to migrate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import alembic.util
import pytest
from alembic import command
from typer.testing import CliRunner

from upstream.cli import app
from upstream.store import migrate, schema_revision
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, head_revision, upgrade
from upstream.store.schema_revision import head_from_files, is_current, stored_revision

runner = CliRunner()
VERSIONS = Path(migrate.__file__).parent / "migrations" / "versions"


@pytest.fixture
def loaded_migrations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The migration modules Alembic loads from now on, by file name, once per load."""
    loads: list[str] = []
    load = alembic.util.load_python_file

    def noted(directory: str, filename: str) -> Any:
        if Path(directory) == VERSIONS:
            loads.append(filename)
        return load(directory, filename)

    monkeypatch.setattr(alembic.util, "load_python_file", noted)
    return loads


def test_migrating_a_current_store_loads_no_migration(
    store: Store, loaded_migrations: list[str]
) -> None:
    upgrade(store)
    upgrade(store)
    assert loaded_migrations == []
    assert stored_revision(store) == head_from_files()


def test_migrating_a_new_store_loads_each_migration_once(
    tmp_path: Path, loaded_migrations: list[str]
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        upgrade(store)
        assert sorted(loaded_migrations) == sorted(p.name for p in VERSIONS.glob("*.py"))
        assert stored_revision(store) == head_from_files()
    finally:
        store.dispose()


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert head_from_files() == head_revision()


def test_a_current_store_is_known_current_without_alembic(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def alembic_asked() -> None:
        raise AssertionError("Alembic was asked for the head")

    monkeypatch.setattr(migrate, "head_revision", alembic_asked)
    assert stored_revision(store) == head_from_files()
    assert is_current(store)


def test_files_the_reading_cannot_follow_leave_the_judgement_to_alembic(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    versions = tmp_path_factory.mktemp("versions")
    (versions / "0001_a.py").write_text('revision = "0001"\ndown_revision = None\n')
    (versions / "0002_b.py").write_text('revision = "0002"\ndown_revision = "0001"\n')
    (versions / "0003_c.py").write_text('revision = "0003"\ndown_revision = "0001"\n')
    monkeypatch.setattr(schema_revision, "_VERSIONS", versions)
    head_from_files.cache_clear()
    try:
        assert head_from_files() is None  # two heads: not a plain chain
        monkeypatch.setattr(migrate, "head_revision", lambda: "9999")
        assert not is_current(store)  # Alembic's (here, a made-up) head decided
    finally:
        head_from_files.cache_clear()


@pytest.fixture
def outdated(store: Store) -> Iterator[Store]:
    """The store one migration behind the head; brought back to it afterwards."""
    with store.engine.connect() as conn:
        command.downgrade(alembic_config(conn), "-1")
        conn.commit()
    yield store
    upgrade(store)


def test_an_outdated_store_is_not_current(outdated: Store) -> None:
    assert stored_revision(outdated) != head_from_files()
    assert not is_current(outdated)


def test_reading_an_outdated_store_is_refused_with_what_to_run(outdated: Store) -> None:
    shown = outdated.display_url
    result = runner.invoke(app, ["lineage", "ns", "orders", "--db", shown])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: the database {shown} is not at the current schema; "
        f"run `upstream db upgrade --db {shown}`\n"
    )


def test_reading_a_current_store_passes_the_check(store: Store) -> None:
    result = runner.invoke(app, ["lineage", "ns", "orders", "--db", store.display_url])
    # Past the check: the services answer that nothing is known of the namespace.
    assert result.exit_code == 1
    assert result.stderr == "error: namespace 'ns' not found\n"
