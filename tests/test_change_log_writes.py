"""Every kind of write appends what it changed to the change log, in its own transaction; a
write that changes nothing appends nothing. The expected ids are worked out from the events:
what each one adds, changes or removes."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from alembic import command
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, ds, job_event, run_event
from tests.conftest import post_events
from tests.test_symlinks import HIVE, ORDERS, READER_RUN, S3, TABLE, WRITER_RUN, reader, writer
from upstream.cli import app as cli_app
from upstream.ingest.rebuild import rebuild
from upstream.ingest.service import ingest_documents
from upstream.model.identity import DatasetRef, JobRef, namespace_id
from upstream.query.marquez import curation
from upstream.retention import prune_store
from upstream.store.change_log import (
    DECLARATIONS,
    ENTITIES,
    RELOAD,
    RUNS,
    TAGS,
    Change,
    changes_since,
    position,
)
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, upgrade

NS = "shop"
RUN = "22222222-0000-4000-8000-000000000001"
ORDERS_ID, TOTALS_ID = DatasetRef(NS, "orders").id, DatasetRef(NS, "totals").id
LOAD_ID = JobRef(NS, "load").id


def _changes(store: Store, after: int) -> dict[str, set[uuid.UUID]]:
    """The kinds and ids appended after `after` (each kind once per transaction)."""
    with store.read() as conn:
        changes = changes_since(conn, after)
    found: dict[str, set[uuid.UUID]] = {}
    for change in changes:
        assert change.kind not in found, f"{change.kind} appended twice: {changes}"
        found[change.kind] = set(change.ids)
    return found


def _position(store: Store) -> int:
    with store.read() as conn:
        return position(conn)


def _ingest(store: Store, *events: dict[str, Any]) -> dict[str, set[uuid.UUID]]:
    """Ingest `events` in one transaction; what it appended."""
    before = _position(store)
    ingest_documents(store, list(events), batch=True)
    return _changes(store, before)


def _load(event_type: str = "COMPLETE", **kw: Any) -> dict[str, Any]:
    return run_event(
        (NS, "load"),
        run_id=RUN,
        event_type=event_type,
        inputs=[ds(NS, "orders")],
        outputs=[ds(NS, "totals")],
        **kw,
    )


def test_a_new_run_appends_its_run_and_the_entities_it_made(store: Store) -> None:
    assert _ingest(store, _load()) == {
        RUNS: {uuid.UUID(RUN)},
        ENTITIES: {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID},
    }


def test_a_repeated_event_appends_nothing(store: Store) -> None:
    _ingest(store, _load())
    assert _ingest(store, _load()) == {}
    assert _ingest(store, _load(), _load()) == {}


def test_another_event_of_the_run_naming_nothing_new_appends_only_the_run(store: Store) -> None:
    _ingest(store, _load("START", time=BASE_TIME - timedelta(minutes=5)))
    # The job, the datasets and the namespace are named again unchanged.
    assert _ingest(store, _load("COMPLETE")) == {RUNS: {uuid.UUID(RUN)}}


def test_a_child_run_appends_its_parent_run_too(store: Store) -> None:
    parent = "22222222-0000-4000-8000-0000000000ff"
    child = run_event((NS, "task"), run_id=RUN, parent=((NS, "dag"), parent))
    assert _ingest(store, child) == {
        RUNS: {uuid.UUID(RUN), uuid.UUID(parent)},
        ENTITIES: {namespace_id(NS), JobRef(NS, "task").id, JobRef(NS, "dag").id},
    }


def test_a_declaration_appends_its_owner(store: Store) -> None:
    declared = job_event((NS, "load"), inputs=[ds(NS, "orders")], outputs=[ds(NS, "totals")])
    assert _ingest(store, declared) == {
        DECLARATIONS: {LOAD_ID},
        ENTITIES: {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID},
    }
    later = job_event((NS, "load"), time=BASE_TIME + timedelta(hours=1), inputs=[ds(NS, "orders")])
    assert _ingest(store, later) == {DECLARATIONS: {LOAD_ID}}


def test_deleting_appends_the_entities_and_an_event_naming_them_revives_them(
    store: Store,
) -> None:
    _ingest(store, _load())
    now = BASE_TIME + timedelta(days=1)

    before = _position(store)
    store.write(lambda conn: curation.delete_dataset(conn, NS, "orders", now))
    assert _changes(store, before) == {ENTITIES: {ORDERS_ID}}

    # The dataset deleted already keeps its deletion: it changes nothing.
    before = _position(store)
    store.write(lambda conn: curation.delete_namespace(conn, NS, now))
    assert _changes(store, before) == {ENTITIES: {namespace_id(NS), LOAD_ID, TOTALS_ID}}

    # Received after the deletion, an event about another run of the job names them again.
    other = run_event((NS, "load"), inputs=[ds(NS, "orders")], outputs=[ds(NS, "totals")])
    changed = _ingest(store, other)
    assert changed[ENTITIES] == {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID}


def test_tags_append_the_dataset_whose_tags_changed(store: Store) -> None:
    _ingest(store, _load() | {"outputs": [_with_field(ds(NS, "totals"), "sum")]})
    now = BASE_TIME

    def changed(work: Any) -> dict[str, set[uuid.UUID]]:
        before = _position(store)
        store.write(work)
        return _changes(store, before)

    assert changed(lambda c: curation.tag_dataset(c, NS, "totals", "pii", now)) == {
        TAGS: {TOTALS_ID}
    }
    assert changed(lambda c: curation.tag_dataset(c, NS, "totals", "pii", now)) == {}
    assert changed(lambda c: curation.tag_field(c, NS, "totals", "sum", "pii", now)) == {
        TAGS: {TOTALS_ID}
    }
    assert changed(lambda c: curation.untag_field(c, NS, "totals", "sum", "pii", now)) == {
        TAGS: {TOTALS_ID}
    }
    assert changed(lambda c: curation.untag_dataset(c, NS, "totals", "pii", now)) == {
        TAGS: {TOTALS_ID}
    }
    assert changed(lambda c: curation.untag_dataset(c, NS, "totals", "pii", now)) == {}
    assert changed(lambda c: curation.put_tag(c, "pii", "personal data", now)) == {}


def _with_field(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    schema = {
        "_producer": "https://example.com",
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
        "fields": [{"name": name, "type": "int"}],
    }
    return dataset | {"facets": {"schema": schema}}


def test_an_alias_claim_appends_the_group_and_the_runs_derived_again(store: Store) -> None:
    _ingest(store, reader())
    # The writer says its S3 path is the Hive table the reader read: the Hive table becomes
    # an alias, and the reader's run is derived again.
    assert _ingest(store, writer()) == {
        RUNS: {uuid.UUID(WRITER_RUN), uuid.UUID(READER_RUN)},
        ENTITIES: {
            namespace_id("pg://shop"),
            namespace_id(S3),
            JobRef("spark", "write_orders").id,
            DatasetRef("pg://shop", "public.orders").id,
            DatasetRef(S3, ORDERS).id,
            DatasetRef(HIVE, TABLE).id,
        },
    }


def test_a_rebuild_appends_a_reload_first(store: Store) -> None:
    _ingest(store, _load())
    before = _position(store)
    rebuild(store)
    with store.read() as conn:
        changes = changes_since(conn, before)
    assert changes[0] == Change(before + 1, RELOAD, ())


def test_a_prune_that_removes_runs_appends_a_reload(store: Store) -> None:
    _ingest(store, _load())
    after_run = BASE_TIME + timedelta(days=1)

    before = _position(store)
    prune_store(store, after_run, dry_run=True)
    prune_store(store, BASE_TIME - timedelta(days=1))  # removes nothing
    assert _changes(store, before) == {}

    prune_store(store, after_run)
    assert _changes(store, before) == {RELOAD: set()}


def test_a_migrated_store_appends_a_reload_and_a_new_one_nothing(store: Store) -> None:
    assert _position(store) == 0  # a new store: migrated from nothing
    with store.engine.connect() as conn:
        command.downgrade(alembic_config(conn), "0010")
        conn.commit()
    upgrade(store)
    assert _changes(store, 0) == {RELOAD: set()}


def test_a_post_over_http_appends_in_its_transaction(client: TestClient, store: Store) -> None:
    post_events(client, _load())
    assert _changes(store, 0) == {
        RUNS: {uuid.UUID(RUN)},
        ENTITIES: {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID},
    }
    before = _position(store)
    post_events(client, _load())
    assert _changes(store, before) == {}


def test_deleting_and_tagging_over_http_append(client: TestClient, store: Store) -> None:
    post_events(client, _load())
    before = _position(store)
    assert client.post(f"/api/v1/namespaces/{NS}/datasets/totals/tags/pii").status_code == 200
    assert client.delete(f"/api/v1/namespaces/{NS}/datasets/orders").status_code == 200
    assert _changes(store, before) == {TAGS: {TOTALS_ID}, ENTITIES: {ORDERS_ID}}


def test_ingest_into_a_database_appends(db_url: str, store: Store, tmp_path: Path) -> None:
    events = tmp_path / "events.ndjson"
    events.write_text(json.dumps(_load()) + "\n")
    result = CliRunner().invoke(cli_app, ["ingest", str(events), "--db", db_url])
    assert result.exit_code == 0, result.output
    assert _changes(store, 0) == {
        RUNS: {uuid.UUID(RUN)},
        ENTITIES: {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID},
    }


def test_field_operations_append_their_run(client: TestClient, store: Store) -> None:
    document = {
        "eventTime": BASE_TIME.isoformat(),
        "destination": {"name": "totals", "fields": ["sum"]},
        "sources": [{"name": "orders"}],
        "operations": [{"name": "add", "inputs": ["orders"], "outputs": ["sum"]}],
        "job": "load",
        "run": {"runId": RUN},
    }
    endpoint = f"/v3/namespaces/{NS}/lineage/field-operations"
    assert client.post(endpoint, json=document).status_code == 201
    assert _changes(store, 0) == {
        RUNS: {uuid.UUID(RUN)},
        ENTITIES: {namespace_id(NS), LOAD_ID, ORDERS_ID, TOTALS_ID},
    }
    before = _position(store)
    assert client.post(endpoint, json=document).status_code == 201
    assert _changes(store, before) == {}
