"""The raw events kept compressed (`upstream.store.payloads`): every event comes back byte for
byte as the text the store keeps of it (its compact JSON: key order kept, whitespace dropped,
escapes written as orjson writes them), whether it was stored before the store had a
dictionary or after; the dictionary is trained once, on the store's own events, also when
two writers reach the point together; one trained by a write that failed is not used."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
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
    count) is kept without a dictionary; the second write finds enough events and trains
    on the latest of them and of its own batch; each later one uses that dictionary."""
    documents = _fixture_documents(fixtures_dir)
    assert len(documents) > 4 * TRAINING
    batches = [documents[: TRAINING - 2], *(documents[i::4][:20] for i in range(4))]
    texts: list[str] = []
    for batch in batches:
        ingest_documents(store, batch, batch=True)
        texts += [json_text.dumps(document) for document in batch]
    # Repeated events (the same content) are stored once: compare the distinct texts.
    distinct = list(dict.fromkeys(texts))
    assert _stored(store) == distinct
    first = TRAINING - 2
    assert _dictionary_ids(store) == [0] * first + [1] * (len(distinct) - first)
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
    response = client.post(
        "/api/v1/lineage", content=SENT.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201, response.text
    assert _stored(store)[-1] == KEPT
    assert _dictionary_ids(store)[-1] == (1 if after_training else 0)
    listed = client.get("/api/v1/events/lineage", params={"limit": 100}).json()["events"]
    assert [e for e in listed if e["job"]["namespace"] == "café"] == [json.loads(KEPT)]


def test_a_dictionary_trained_by_a_failed_write_is_not_used(store: Store) -> None:
    """The write that trains fails after training: its dictionary goes with it, and the next
    write trains one again, which every payload written afterwards names."""
    ingest_documents(store, _events(TRAINING - 1), batch=True)

    def fails(conn: Any) -> None:
        payloads.pack(conn, [json_text.dumps(e) for e in _events(2, first=100)])
        assert conn.execute(sa.select(sa.func.count()).select_from(t.event_dictionaries)).scalar()
        raise RuntimeError("the write fails after training")

    with pytest.raises(RuntimeError):
        store.write(fails)
    assert _dictionaries(store) == []
    ingest_documents(store, _events(3, first=200), batch=True)
    assert _dictionaries(store) == [(1, TRAINING)]
    expected = [json_text.dumps(e) for e in [*_events(TRAINING - 1), *_events(3, first=200)]]
    again = Store(store.url)
    try:
        assert _stored(again) == expected
    finally:
        again.dispose()
    assert _dictionary_ids(store) == [0] * (TRAINING - 1) + [1] * 3


def test_two_writers_reaching_the_training_point_together_store_one_dictionary(
    db_url: str,
) -> None:
    """Two stores (as two processes) write batches at once from an empty store: one of them
    trains the dictionary, and every event of both comes back byte for byte."""
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
        expected = {
            json_text.dumps(e)
            for index in range(2)
            for batch in range(6)
            for e in _events(5, first=1000 * index + 10 * batch)
        }
        stored = _stored(stores[0])
        assert len(stored) == len(expected)
        assert set(stored) == expected
        assert [ident for ident, _ in _dictionaries(stores[0])] == [1]
        assert set(_dictionary_ids(stores[0])) <= {0, 1}
        assert _dictionary_ids(stores[0])[-1] == 1
    finally:
        for each in stores:
            each.dispose()


@pytest.fixture
def two_writers(store: Store) -> Iterator[tuple[sa.Connection, sa.Connection]]:
    if store.dialect != "postgresql":
        pytest.skip(
            "SQLite lets one writer in at a time: a second one starts after the first commits "
            "(test_two_writers_reaching_the_training_point_together_store_one_dictionary)"
        )
    first, second = store.engine.connect(), store.engine.connect()
    yield first, second
    first.close()
    second.close()


def test_a_writer_does_not_wait_for_another_training(
    store: Store, two_writers: tuple[sa.Connection, sa.Connection]
) -> None:
    """While one PostgreSQL transaction trains the dictionary (not committed yet), another
    writes its batch without one rather than wait on it; both read back."""
    first, second = two_writers
    texts = [json_text.dumps(e) for e in _events(TRAINING)]
    with first.begin():
        trained = payloads.pack(first, texts[:TRAINING])
        with second.begin():
            plain = payloads.pack(second, texts[:2])
        assert payloads.unpack(second, plain) == texts[:2]
    ids = [zstandard.get_frame_parameters(frame).dict_id for frame in trained + plain]
    assert ids == [1] * TRAINING + [0, 0]
    with store.read() as conn:
        assert payloads.unpack(conn, trained) == texts
    assert _dictionaries(store) == [(1, TRAINING)]


def test_a_writer_that_found_no_dictionary_before_another_committed_one_trains_none(
    store: Store, two_writers: tuple[sa.Connection, sa.Connection]
) -> None:
    """A PostgreSQL writer finds no dictionary, and takes the training lock only after
    another writer trained one and committed (the lock free again): it uses that one and
    trains no second (the deployment test's 20,000 events found two stored)."""
    first, second = two_writers
    texts = [json_text.dumps(e) for e in _events(TRAINING)]
    with second.begin():
        d = t.event_dictionaries.c
        assert second.execute(sa.select(d.id)).first() is None  # its look: none yet
        with first.begin():
            payloads.pack(first, texts)
        later = [json_text.dumps(e) for e in _events(TRAINING, first=100)]
        found = payloads._train_now(second, later)
        assert found is not None
        assert found.dict_id() == 1
    assert _dictionaries(store) == [(1, TRAINING)]


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


def test_the_write_that_trains_keeps_no_other_writer_waiting(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a write trains the dictionary (held here until the other write is done, or 20 s),
    a write naming one of its runs is not kept waiting: training comes before the write locks
    any row, so the second write ends within seconds, long before the first could."""
    if store.dialect != "postgresql":
        pytest.skip("SQLite lets in one writer at a time: there is no other writer to keep")
    training, other_done = threading.Event(), threading.Event()
    real_train = payloads.train

    def held_train(texts: Any, ident: int) -> zstandard.ZstdCompressionDict:
        training.set()
        other_done.wait(20)
        return real_train(texts, ident)

    monkeypatch.setattr(payloads, "train", held_train)
    documents = _events(TRAINING)
    first = threading.Thread(target=lambda: ingest_documents(store, documents, batch=True))
    first.start()
    try:
        assert training.wait(60)
        same_run = {**_events(1)[0], "eventType": "COMPLETE", "eventTime": "2026-11-02T00:00:00Z"}
        started = time.monotonic()
        ingest_documents(store, [same_run], batch=True)
        waited = time.monotonic() - started
    finally:
        other_done.set()
        first.join(60)
    assert waited < 8, f"the second write waited {waited:.1f} s for the one training"
    assert len(_stored(store)) == TRAINING + 1
