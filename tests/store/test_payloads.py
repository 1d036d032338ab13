"""The raw events kept compressed (`upstream.store.payloads`): every event comes back byte for
byte as the text the store keeps of it (its compact JSON: key order kept, whitespace dropped,
escapes written as orjson writes them), whether it was stored before the store had a
dictionary or after; the dictionary is trained once, on the store's own events, after the
commit of the write that brought the store to the training count, which does not wait for
it; also when two processes reach the point together, and a process finds a dictionary
another one trained; before there is one, writes send no statement to find it."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import zstandard
from alembic import command
from fastapi.testclient import TestClient

from tests.access.test_event_namespaces import insert_as_text
from tests.builders import BASE_TIME, ds, hours, run_event
from tests.query.test_derived_graph import second_db_url
from upstream.ingest.service import ingest_documents, prepare_each
from upstream.model import json_text
from upstream.model.facts import EventFacts
from upstream.store import payloads
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.event_log import events_after
from upstream.store.migrate import alembic_config, session_lock, upgrade

__all__ = ["second_db_url"]

#: The events a dictionary is trained on, in these tests (the store's is 2,000).
TRAINING = 12


@pytest.fixture(autouse=True)
def _train_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payloads, "TRAINING_EVENTS", TRAINING)


def _events(count: int, first: int = 0) -> list[dict[str, Any]]:
    return [
        run_event(
            ("jobs", f"job_{n % 3}"),
            run_id=f"00000000-0000-4000-8000-{n:012d}",
            time=BASE_TIME + hours(n),
            run_facets={"note": {"_producer": "p", "_schemaURL": "s", "n": n, "text": "é" * n}},
        )
        for n in range(first, first + count)
    ]


def _stored(store: Store) -> list[str]:
    with store.read() as conn:
        return [event.payload for event in events_after(conn, 0, 100_000)]


def _dictionary_ids(store: Store) -> list[int]:
    """The dictionary each stored payload names, in seq order (0: none)."""
    with store.read() as conn:
        query = sa.select(t.events.c.payload_zstd).order_by(t.events.c.seq)
        frames = conn.execute(query).scalars().all()
    return [zstandard.get_frame_parameters(frame).dict_id for frame in frames]


def _dictionaries(store: Store) -> list[tuple[int, int]]:
    d = t.event_dictionaries.c
    with store.read() as conn:
        return [tuple(row) for row in conn.execute(sa.select(d.id, d.events).order_by(d.id))]


def _fixture_documents(fixtures_dir: Path) -> list[dict[str, Any]]:
    """The real producers' events the server accepts (some fixtures are templates)."""
    documents: list[dict[str, Any]] = []
    for path in sorted(fixtures_dir.rglob("*.json")):
        document = json.loads(path.read_text())
        documents += document if isinstance(document, list) else [document]
    each = prepare_each(documents, batch=True)
    return [d for d, item in zip(documents, each, strict=True) if isinstance(item, EventFacts)]


def test_real_events_come_back_byte_for_byte_before_and_after_the_dictionary(
    store: Store, fixtures_dir: Path
) -> None:
    """The producers' events in five batches: the first batch (fewer than the training
    count) is kept without a dictionary, and so is the second, which brings the store past
    it: once it committed, the dictionary is trained on the latest events stored; each
    later batch uses it."""
    documents = _fixture_documents(fixtures_dir)
    assert len(documents) > 4 * TRAINING
    batches = [documents[: TRAINING - 2], *(documents[i::4][:20] for i in range(4))]
    texts: list[str] = []
    before = 0
    for number, batch in enumerate(batches):
        ingest_documents(store, batch, batch=True)
        store.settle()  # the training, after the second batch
        texts += [json_text.dumps(document) for document in batch]
        if number == 1:
            before = len(set(texts))
    # Repeated events (the same content) are stored once: compare the distinct texts.
    distinct = list(dict.fromkeys(texts))
    assert _stored(store) == distinct
    assert TRAINING < before < len(distinct)
    assert _dictionary_ids(store) == [0] * before + [1] * (len(distinct) - before)
    assert _dictionaries(store) == [(1, TRAINING)]
    again = Store(store.url)  # another process: reads the dictionary from the store
    try:
        assert _stored(again) == distinct
    finally:
        again.dispose()


#: A batch as a producer may send it: spaces and line breaks, keys in no particular order,
#: escaped and literal non-ASCII, an escaped slash, quotes, backslashes and a control
#: character, numbers written in several ways.
SENT = (
    '[ {\n  "run": {"runId": "00000000-0000-4000-8000-0000000000ee", "facets": {}},\n'
    '  "eventType" : "START",\n  "eventTime": "2026-11-01T12:00:00Z",\n'
    '  "job": {"namespace": "caf\\u00e9", "name": "d\\u00e9j\\u00e0 \\ud83d\\ude00 \\/ \\"q\\"",'
    ' "facets": {}},\n  "inputs": [], "outputs": [],\n'
    '  "zz": {"tab": "a\\tb", "bell": "\\u0007", "back": "\\\\", "literal": "日本 ü"},\n'
    '  "num": [1.0, 1e2, -0, 10],\n'
    '  "producer": "https://example.com/p", "schemaURL": '
    '"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"\n} ]'
)
#: What the store keeps of it: the compact JSON, worked out by hand.
KEPT = (
    '{"run":{"runId":"00000000-0000-4000-8000-0000000000ee","facets":{}},'
    '"eventType":"START","eventTime":"2026-11-01T12:00:00Z",'
    '"job":{"namespace":"café","name":"déjà 😀 / \\"q\\"","facets":{}},'
    '"inputs":[],"outputs":[],'
    '"zz":{"tab":"a\\tb","bell":"\\u0007","back":"\\\\","literal":"日本 ü"},'
    '"num":[1.0,100.0,0,10],'
    '"producer":"https://example.com/p",'
    '"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}'
)


@pytest.mark.parametrize("after_training", [False, True], ids=["no dictionary", "dictionary"])
def test_odd_bytes_come_back_as_the_store_keeps_them(
    client: TestClient, store: Store, after_training: bool
) -> None:
    if after_training:
        ingest_documents(store, _events(TRAINING), batch=True)
        store.settle()
    response = client.post(
        "/api/v1/lineage", content=SENT.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201, response.text
    assert _stored(store)[-1] == KEPT
    assert _dictionary_ids(store)[-1] == (1 if after_training else 0)
    listed = client.get("/api/v1/events/lineage", params={"limit": 100}).json()["events"]
    assert [e for e in listed if e["job"]["namespace"] == "café"] == [json.loads(KEPT)]


def test_the_write_that_reaches_the_training_count_does_not_wait_for_the_training(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write that brings the store to the training count returns while the training
    (held here until released) has not ended; a write naming one of its runs meanwhile is
    kept without a dictionary; once the training is done, the next write uses it, and every
    event reads back byte for byte."""
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    real_train = payloads.train

    def held_train(texts: Any, ident: int) -> zstandard.ZstdCompressionDict:
        started.set()
        release.wait(10)
        try:
            return real_train(texts, ident)
        finally:
            finished.set()

    monkeypatch.setattr(payloads, "train", held_train)
    documents = _events(TRAINING)
    try:
        ingest_documents(store, documents, batch=True)
        assert started.wait(30), "no training started after the write"
        assert not finished.is_set(), "the write waited for the training"
        same_run = {**documents[0], "eventType": "COMPLETE", "eventTime": "2026-11-02T00:00:00Z"}
        ingest_documents(store, [same_run], batch=True)
        assert not finished.is_set()
    finally:
        release.set()
        store.settle()
    later = _events(2, first=100)
    ingest_documents(store, later, batch=True)
    assert _dictionaries(store) == [(1, TRAINING)]
    assert _dictionary_ids(store) == [0] * (TRAINING + 1) + [1, 1]
    again = Store(store.url)  # another process: reads the dictionary from the store
    try:
        assert _stored(again) == [json_text.dumps(e) for e in [*documents, same_run, *later]]
    finally:
        again.dispose()


def test_before_a_dictionary_writes_send_no_statement_for_one(
    statements: tuple[Store, list[str]],
) -> None:
    """A process looks for the dictionary in its first write only (the dictionary, then how
    many events the store holds); the writes after it, still short of the training count,
    send neither statement."""
    store, sent = statements
    ingest_documents(store, _events(2), batch=True)
    assert len([s for s in sent if "event_dictionaries" in s]) == 1
    counted = len([s for s in sent if "count(" in s.lower()])
    sent.clear()
    ingest_documents(store, _events(3, first=10), batch=True)
    ingest_documents(store, _events(3, first=20), batch=True)
    store.settle()
    assert [s for s in sent if "event_dictionaries" in s] == []
    assert counted == 1
    assert [s for s in sent if "count(" in s.lower()] == []
    assert _dictionary_ids(store) == [0] * 8


def test_a_process_finds_the_dictionary_another_one_trained(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that looked before the store had a dictionary looks again after storing
    `LOOK_EVERY` events (on a thread of its own), and uses the one another process trained
    from its next write on."""
    monkeypatch.setattr(payloads, "LOOK_EVERY", 3)
    this, other = Store(db_url), Store(db_url)
    try:
        ingest_documents(this, _events(1), batch=True)  # looks: none yet
        ingest_documents(other, _events(TRAINING, first=100), batch=True)
        other.settle()
        assert _dictionaries(other) == [(1, TRAINING)]
        ingest_documents(this, _events(1, first=200), batch=True)  # 2 since its look
        ingest_documents(this, _events(1, first=300), batch=True)  # 3: it looks again
        this.settle()
        ingest_documents(this, _events(1, first=400), batch=True)
        assert _dictionary_ids(this) == [0] * (1 + TRAINING + 2) + [1]
        expected = [_events(1), _events(TRAINING, first=100), _events(1, first=200)]
        expected += [_events(1, first=300), _events(1, first=400)]
        assert _stored(this) == [json_text.dumps(e) for group in expected for e in group]
    finally:
        this.dispose()
        other.dispose()


def test_two_writers_reaching_the_training_point_together_store_one_dictionary(
    db_url: str,
) -> None:
    """Two stores (as two processes) write batches at once from an empty store: one
    dictionary is stored, both use it once their training (or look) is done, and every
    event of both comes back byte for byte."""
    stores = [Store(db_url), Store(db_url)]
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def write(index: int) -> None:
        try:
            start.wait()
            for batch in range(6):
                first = 1000 * index + 10 * batch
                ingest_documents(stores[index], _events(5, first=first), batch=True)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert failures == []
        # Past the training count: a process that found another one training looks again
        # after its next write, and then knows the dictionary.
        for extra in (5000, 6000):
            for index, each in enumerate(stores):
                each.settle()
                ingest_documents(each, _events(1, first=extra + index), batch=True)
        expected = {
            json_text.dumps(e)
            for index in range(2)
            for first in [*(1000 * index + 10 * batch for batch in range(6))]
            for e in _events(5, first=first)
        }
        expected |= {
            json_text.dumps(e)
            for index in range(2)
            for extra in (5000, 6000)
            for e in _events(1, first=extra + index)
        }
        stored = _stored(stores[0])
        assert len(stored) == len(expected)
        assert set(stored) == expected
        assert [ident for ident, _ in _dictionaries(stores[0])] == [1]
        assert set(_dictionary_ids(stores[0])) == {0, 1}
        assert _dictionary_ids(stores[0])[-2:] == [1, 1]
    finally:
        for each in stores:
            each.dispose()


def test_a_process_does_not_wait_for_another_training(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one process trains the dictionary (held here, not stored yet), another one's
    look neither trains nor waits for it: its writes go on without one, and its next look
    finds the one stored."""
    monkeypatch.setattr(payloads, "LOOK_EVERY", 1)
    started, release = threading.Event(), threading.Event()
    trained: list[int] = []
    real_train = payloads.train

    def held_train(texts: Any, ident: int) -> zstandard.ZstdCompressionDict:
        trained.append(ident)
        started.set()
        release.wait(10)
        return real_train(texts, ident)

    monkeypatch.setattr(payloads, "train", held_train)
    other = Store(store.url)
    try:
        ingest_documents(other, _events(1, first=500), batch=True)  # looks: none yet
        other.settle()
        ingest_documents(store, _events(TRAINING), batch=True)
        assert started.wait(30)
        ingest_documents(other, _events(1, first=600), batch=True)  # due to look again
        other.settle()  # its look ended: it did not wait for the training
        assert not release.is_set()
        assert trained == [1]
        release.set()
        store.settle()
        ingest_documents(other, _events(1, first=700), batch=True)  # looks: finds it
        other.settle()
        ingest_documents(other, _events(1, first=800), batch=True)
        assert _dictionary_ids(store) == [0] * (1 + TRAINING + 2) + [1]
        assert trained == [1]
    finally:
        release.set()
        other.dispose()


@pytest.mark.parametrize("count", [TRAINING - 1, TRAINING + 3], ids=["few", "enough"])
def test_the_migration_converts_stored_events_and_back(second_db_url: str, count: int) -> None:
    """Events stored as text by revision 0024 are converted by 0025: compressed with a
    dictionary trained on the latest of them when there are enough, without one otherwise,
    each with the namespaces of its inputs and outputs; down again, they are text as before."""
    old = Store(second_db_url)
    try:
        upgrade(old, "0024")
        documents = _events(count)
        documents[0]["inputs"] = [ds("lake", "raw"), ds("crm", "leads")]
        documents[0]["outputs"] = [ds("lake", "clean")]
        texts = insert_as_text(old, documents)
        upgrade(old)
        fresh = Store(second_db_url)  # a process that never saw the store before
        try:
            assert _stored(fresh) == texts
            trained = count >= TRAINING
            assert _dictionary_ids(fresh) == [1 if trained else 0] * count
            assert _dictionaries(fresh) == ([(1, TRAINING)] if trained else [])
            with fresh.read() as conn:
                query = sa.select(t.events.c.io_namespaces).order_by(t.events.c.seq)
                listed = conn.execute(query).scalars().all()
            assert listed == ['["crm","lake"]'] + [None] * (count - 1)
        finally:
            fresh.dispose()
        with session_lock(old, 0) as conn:
            command.downgrade(alembic_config(conn), "0024")
            conn.commit()
        with old.read() as conn:
            query = sa.text("SELECT payload FROM events ORDER BY seq")
            assert conn.execute(query).scalars().all() == texts
            assert "event_dictionaries" not in sa.inspect(conn).get_table_names()
    finally:
        old.dispose()
