"""The namespaces each stored event names (`events.namespaces`, design §5), listed when it is
accepted and, for events stored before the list existed, by the migration that added it; a
scoped reader's page of events is decided on that list, without reading any payload."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from tests.builders import ds, run_event
from tests.query.test_derived_graph import second_db_url
from upstream.ingest.documents import event_record
from upstream.ingest.service import ingest_documents
from upstream.model import json_text
from upstream.model.access import Visibility
from upstream.model.events import parse_event
from upstream.model.named_namespaces import namespaces_in_text, namespaces_text
from upstream.query.marquez.common import Page
from upstream.query.marquez.events import lineage_events
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

__all__ = ["second_db_url"]

RUN = "00000000-0000-4000-8000-000000000e01"


def depending_event() -> dict[str, Any]:
    """finance's report: reads a finance table known by a crm symlink, and its run depends
    on an hr job (`jobDependencies`) — three namespaces, two of them only inside facets."""
    symlink = {"identifiers": [{"namespace": "crm", "name": "accounts", "type": "TABLE"}]}
    dependencies = {
        "upstream": [{"job": {"namespace": "hr", "name": "month_end"}, "dependency_type": "DIRECT"}]
    }
    return run_event(
        ("finance", "report"),
        run_id=RUN,
        inputs=[ds("finance", "invoices", symlinks=symlink)],
        run_facets={"jobDependencies": dependencies},
    )


def listed(store: Store) -> list[list[str]]:
    with store.read() as conn:
        texts = conn.execute(sa.select(t.events.c.namespaces).order_by(t.events.c.seq)).scalars()
        return [orjson.loads(text) for text in texts]


def test_an_accepted_event_keeps_every_namespace_it_names(store: Store) -> None:
    ingest_documents(store, [depending_event()], batch=True)
    assert listed(store) == [["crm", "finance", "hr"]]


def test_a_scoped_page_of_events_is_decided_on_the_kept_list_not_the_payload(
    store: Store,
) -> None:
    """The list alone decides: an event whose list says it names hr is hidden from a finance
    reader even though its payload names finance only."""
    ingest_documents(store, [run_event(("finance", "load"), run_id=RUN)], batch=True)
    finance = Visibility(("finance",))
    with store.read() as conn:
        shown = lineage_events(
            conn, before=None, after=None, direction="asc", page=Page(), visibility=finance
        )
    assert shown["totalCount"] == 1
    with store.engine.begin() as conn:
        conn.execute(t.events.update().values(namespaces='["finance", "hr"]'))
    with store.read() as conn:
        shown = lineage_events(
            conn, before=None, after=None, direction="asc", page=Page(), visibility=finance
        )
        everything = lineage_events(conn, before=None, after=None, direction="asc", page=Page())
    assert shown == {"events": [], "totalCount": 0}
    assert everything["totalCount"] == 1


def test_the_migration_lists_the_namespaces_of_events_already_stored(second_db_url: str) -> None:
    old = Store(second_db_url)
    try:
        upgrade(old, "0019")
        documents = [depending_event(), run_event(("crm", "sync"), outputs=[ds("crm", "leads")])]
        insert_as_text(old, documents)
        upgrade(old)
        assert listed(old) == [["crm", "finance", "hr"], ["crm"]]
    finally:
        old.dispose()


def test_the_list_is_read_off_the_events_compact_text_as_the_walk_finds_it() -> None:
    """Namespaces with quotes, backslashes, escapes and non-ASCII text are read as the walk
    reads them; text that only looks like a `namespace` key inside a string, a key that
    merely ends in `namespace`, and a `namespace` that is no string name nothing."""
    document = {
        "job": {"namespace": 'fi"n\\a/nce', "name": "x"},
        "inputs": [{"namespace": "h\u00e9r\u0001", "name": '{"namespace":"spoof"}'}],
        "outputs": [[{"namespace": "deep", "Namespace": "Other"}], {"namespace": 3}],
        "run": {"facets": {"note": '","namespace":"spoof2', "subnamespace": "not"}},
        "eventTime": "2026-01-01T00:00:00Z",
    }
    text = json_text.dumps(document)
    assert namespaces_in_text(text) == namespaces_text(document)
    assert orjson.loads(namespaces_in_text(text)) == ["deep", 'fi"n\\a/nce', "h\u00e9r\u0001"]


def test_an_event_record_lists_the_namespaces_of_the_text_it_keeps() -> None:
    document = depending_event()
    record = event_record(parse_event(document), document, json_text.dumps(document))
    assert orjson.loads(record.namespaces) == ["crm", "finance", "hr"]


def insert_as_text(store: Store, documents: list[dict[str, Any]]) -> list[str]:
    """Store `documents` as events were kept before migration 0025 (the payload as text, no
    list of namespaces); their texts."""
    texts = []
    with store.engine.begin() as conn:
        for document in documents:
            record = event_record(parse_event(document), document)
            conn.execute(
                sa.text(
                    "INSERT INTO events (event_key, month, event_type, event_time, "
                    "received_at, payload) VALUES (:key, 202611, :type, :time, :time, :doc)"
                ),
                {
                    "key": record.key,
                    "type": record.event_type,
                    "time": record.event_time,
                    "doc": record.payload,
                },
            )
            texts.append(record.payload)
    return texts
