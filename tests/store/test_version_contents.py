"""Dataset versions keep their fields and facets once per distinct content
(`upstream.store.version_contents`): a COMPLETE restating its START's output, or a later run
writing what the last one did, adds a version row and no content; a content changed in one
byte is a content of its own; a content this process knows to be stored is not written
again; and the migration that split them (0023) keeps every version's content readable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from tests.builders import BASE_TIME, ds, hours, run_event, schema_facet
from upstream.ingest.documents import translate_document
from upstream.ingest.recipe import apply_recipe
from upstream.ingest.service import ingest_documents
from upstream.query.marquez.common import Page
from upstream.query.marquez.datasets import list_dataset_versions
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

NS = "versions"


def _load(run: int, *, field: str = "id", event_type: str = "COMPLETE") -> dict[str, Any]:
    """Run `run` of the job `load`, writing `clean` with a one-field schema."""
    clean = ds(NS, "clean", schema=schema_facet((field, "BIGINT"), ("name", "TEXT")))
    return run_event(
        (NS, "load"),
        run_id=f"00000000-0000-4000-8000-{run:012d}",
        event_type=event_type,
        time=BASE_TIME + hours(run),
        inputs=[ds(NS, "raw")],
        outputs=[clean],
    )


def _count(store: Store, table: sa.Table) -> int:
    with store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _versions(store: Store) -> dict[str, Any]:
    with store.read() as conn:
        return dict(list_dataset_versions(conn, NS, "clean", Page(limit=100)))


def test_a_repeated_content_is_stored_once_and_a_changed_byte_makes_another(
    store: Store,
) -> None:
    ingest_documents(store, [_load(1, event_type="START"), _load(1)], batch=True)
    ingest_documents(store, [_load(2)], batch=True)
    ingest_documents(store, [_load(3, event_type="START")], batch=True)
    ingest_documents(store, [_load(3)], batch=True)
    assert _count(store, t.dataset_versions) == 3
    assert _count(store, t.version_contents) == 1
    ingest_documents(store, [_load(4, field="ie")], batch=True)
    assert _count(store, t.dataset_versions) == 4
    assert _count(store, t.version_contents) == 2
    fields = [[f["name"] for f in v["fields"]] for v in _versions(store)["versions"]]
    assert fields == [["ie", "name"], ["id", "name"], ["id", "name"], ["id", "name"]]


def test_a_content_known_to_be_stored_is_not_written_again(
    statements: tuple[Store, list[str]],
) -> None:
    store, sent = statements
    ingest_documents(store, [_load(1)], batch=True)
    assert any("INTO version_contents" in statement for statement in sent)
    sent.clear()
    ingest_documents(store, [_load(2)], batch=True)
    assert not any("version_contents" in statement for statement in sent)
    assert _count(store, t.dataset_versions) == 2


def test_a_complete_restating_its_starts_version_does_not_read_it_back(
    statements: tuple[Store, list[str]],
) -> None:
    """The version is stored with the same content: nothing to merge, nothing read. A
    COMPLETE that adds a facet merges it into the START's content, a content of its own."""
    store, sent = statements
    ingest_documents(store, [_load(1, event_type="START")], batch=True)
    sent.clear()
    ingest_documents(store, [_load(1)], batch=True)
    assert not any("version_contents" in statement for statement in sent)
    changed = _load(2)
    ingest_documents(store, [_load(2, event_type="START")], batch=True)
    changed["outputs"][0]["facets"]["owner"] = {"name": "finance"}
    ingest_documents(store, [changed], batch=True)
    assert _count(store, t.version_contents) == 2
    newest = _versions(store)["versions"][0]
    assert set(newest["facets"]) == {"schema", "owner"}


def test_a_content_written_by_a_rolled_back_write_is_written_again(store: Store) -> None:
    """What a write that did not commit stored is not remembered: the next write stores it."""

    def fails(conn: sa.Connection) -> None:
        apply_recipe(conn, [translate_document(_load(1))], datetime.now(UTC))
        raise RuntimeError("the transaction ends here")

    with pytest.raises(RuntimeError):
        store.write(fails)
    assert _count(store, t.version_contents) == 0
    ingest_documents(store, [_load(1)], batch=True)
    assert _count(store, t.version_contents) == 1
    assert len(_versions(store)["versions"]) == 1


def test_the_migration_keeps_every_versions_content_readable(migrated_copy_url: str) -> None:
    """Down to 0022, where each version held its fields and facets, and up again: the
    contents are moved out once each, and every version reads back as it did."""
    old = Store(migrated_copy_url)
    try:
        ingest_documents(old, [_load(1, event_type="START"), _load(1)], batch=True)
        ingest_documents(old, [_load(2), _load(3, field="ie")], batch=True)
        before = _versions(old)
        with session_lock(old, 0) as conn:
            command.downgrade(alembic_config(conn), "0022")
            conn.commit()
        with old.read() as conn:
            tables = sa.inspect(conn).get_table_names()
            columns = {c["name"] for c in sa.inspect(conn).get_columns("dataset_versions")}
        assert "version_contents" not in tables
        assert {"fields", "facets"} <= columns
        upgrade(old)
        assert _count(old, t.version_contents) == 2
        assert _versions(old) == before
        assert [len(v["fields"]) for v in before["versions"]] == [2, 2, 2]
    finally:
        old.dispose()
