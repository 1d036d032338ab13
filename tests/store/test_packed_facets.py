"""Runs' and relations' facets and versions' fields and facets kept compressed
(`upstream.store.packed_facets`): each is one zstd frame naming the store's event dictionary
(none before the store has one), it comes back as the document the producer sent, keys in the
producer's order, on both stores, merged across a run's events; migration 0026 converts the
documents of a store and back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
import zstandard
from alembic import command
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, job_event, run_event, schema_facet
from upstream.ingest.service import ingest_documents
from upstream.model import json_text
from upstream.query.marquez.runs import run_docs
from upstream.store import packed_facets, payloads
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

#: The events a dictionary is trained on, in these tests (the store's is 2,000).
TRAINING = 12

#: Facets as a producer may send them: keys in no sorted order (PostgreSQL's `jsonb` would
#: put "a" before "zz"), non-ASCII text, a control character, an integer beyond 64 bits,
#: floats, nesting, an empty object.
ODD = {
    "zz": {"_producer": "p", "_schemaURL": "s", "text": 'déjà 😀 \u0007 "q" \\'},
    "a": {"_producer": "p", "_schemaURL": "s", "big": 18446744073709551616, "f": [1.0, 0.1]},
    "m": {"_producer": "p", "_schemaURL": "s", "nested": {"y": {}, "b": [None, True]}},
}


@pytest.fixture(autouse=True)
def _train_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payloads, "TRAINING_EVENTS", TRAINING)


def _run_id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _events(count: int) -> list[dict[str, Any]]:
    """Runs with facets of their own, reading and writing with input and output facets."""
    return [
        run_event(
            ("jobs", f"job_{n % 3}"),
            run_id=_run_id(n),
            time=BASE_TIME + hours(n),
            run_facets={**ODD, "note": {"_producer": "p", "_schemaURL": "s", "n": n}},
            inputs=[{**ds("lake", "raw"), "inputFacets": {**ODD, "n": {"n": n}}}],
            outputs=[
                {
                    **ds("lake", f"out_{n}", schema=schema_facet(("id", "INT"), ("é", "TEXT"))),
                    "outputFacets": {"rows": {"count": n}},
                }
            ],
        )
        for n in range(count)
    ]


def _frames(store: Store, table: sa.Table, column: str = "facets") -> list[bytes]:
    with store.read() as conn:
        return list(conn.execute(sa.select(table.c[column]).order_by(table.c.id)).scalars())


def _documents(store: Store, table: sa.Table, column: str = "facets") -> list[str]:
    """The stored documents in `column` of `table`'s rows, by id, as compact JSON text."""
    with store.read() as conn:
        found = packed_facets.unpack(conn, _frames(store, table, column))
    return [json_text.dumps(document) for document in found]


def test_facets_are_packed_with_the_dictionary_and_come_back_as_sent(
    client: TestClient, store: Store
) -> None:
    """The first events' facets are packed without a dictionary, those after the training
    (which follows the commit of the write that reached the count) with it; the run's facets
    and its input's come back through the Marquez API in the order they were sent
    (PostgreSQL's `jsonb` sorted them by key length)."""
    first, later = _events(TRAINING), _events(TRAINING + 4)[TRAINING:]
    ingest_documents(store, first, batch=True)
    store.settle()  # the dictionary's training, on a thread of its own
    ingest_documents(store, later, batch=True)
    ids = [zstandard.get_frame_parameters(frame).dict_id for frame in _frames(store, t.runs)]
    assert ids == [0] * TRAINING + [1] * 4  # run ids sort as they were sent
    sent = [json_text.dumps(e["run"]["facets"]) for e in first + later]
    assert _documents(store, t.runs) == sent
    packed = TRAINING + 2  # one of the runs packed with the dictionary
    run = client.get(f"/api/v1/jobs/runs/{_run_id(packed)}").json()
    assert list(run["facets"]) == ["zz", "a", "m", "note"]
    assert run["facets"]["a"]["big"] == 18446744073709551616
    assert list(run["inputDatasetVersions"][0]["facets"]) == ["zz", "a", "m", "n"]
    assert run["outputDatasetVersions"][0]["facets"] == {"rows": {"count": packed}}
    versions = client.get(f"/api/v1/namespaces/lake/datasets/out_{packed}/versions").json()
    assert [f["name"] for f in versions["versions"][0]["fields"]] == ["id", "é"]
    assert list(versions["versions"][0]["facets"]) == ["schema"]
    facets = client.get(f"/api/v1/jobs/runs/{_run_id(1)}/facets", params={"type": "run"}).json()
    assert json_text.dumps(facets["facets"]) == sent[1]


def test_a_runs_facets_merge_across_its_events(store: Store) -> None:
    """A COMPLETE adds its facets to its START's and replaces those of the same name."""
    start = run_event(
        ("jobs", "j"),
        run_id=_run_id(1),
        event_type="START",
        run_facets={"b": {"v": 1}, "a": {"v": 1}},
        inputs=[{**ds("lake", "raw"), "inputFacets": {"x": {"v": 1}}}],
    )
    complete = run_event(
        ("jobs", "j"),
        run_id=_run_id(1),
        time=BASE_TIME + hours(1),
        run_facets={"a": {"v": 2}, "c": {"v": 2}},
        inputs=[{**ds("lake", "raw"), "inputFacets": {"y": {"v": 2}}}],
    )
    ingest_documents(store, [start], batch=True)
    ingest_documents(store, [complete], batch=True)
    assert _documents(store, t.runs) == ['{"b":{"v":1},"a":{"v":2},"c":{"v":2}}']
    assert _documents(store, t.relations) == ['{"x":{"v":1},"y":{"v":2}}']


def test_the_migration_converts_stored_facets_and_back(migrated_copy_url: str) -> None:
    """Down to 0025 the facets are JSON documents again, the same ones; up again each is
    packed with the store's latest dictionary, those packed without one before too; the
    Marquez answers of the store are the same throughout."""
    store = Store(migrated_copy_url)
    try:
        declared = job_event(
            ("jobs", "declared"),
            inputs=[{**ds("lake", "raw"), "inputFacets": {"d": {"v": 1}}}],
        )
        ingest_documents(store, [*_events(TRAINING - 2), declared], batch=True)
        ingest_documents(store, _events(TRAINING + 2)[TRAINING - 2 :], batch=True)
        store.settle()  # the dictionary's training, after the commit that reached the count
        tables = [
            (t.runs, "facets"),
            (t.relations, "facets"),
            (t.declared_relations, "facets"),
            (t.version_contents, "fields"),
            (t.version_contents, "facets"),
        ]
        before = {(table.name, c): _documents(store, table, c) for table, c in tables}
        assert before["declared_relations", "facets"] == ['{"d":{"v":1}}']
        assert len(before["version_contents", "fields"]) == 1  # every output's schema
        answer = _run_answer(store)
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0025")
            conn.commit()
        with store.read() as conn:
            for table, column in tables:
                query = sa.text(f"SELECT {column} FROM {table.name} ORDER BY id")
                found = [_value(v) for v in conn.execute(query).scalars()]
                expected = [json_text.parse(d) for d in before[table.name, column]]
                assert found == expected, (table.name, column)
        upgrade(store)
        fresh = Store(migrated_copy_url)  # a process that never saw the store before
        try:
            for table, column in tables:
                frames = _frames(fresh, table, column)
                assert {zstandard.get_frame_parameters(f).dict_id for f in frames} == {1}
                documents = [json_text.parse(d) for d in _documents(fresh, table, column)]
                assert documents == [json_text.parse(d) for d in before[table.name, column]]
            assert _run_answer(fresh) == answer
        finally:
            fresh.dispose()
    finally:
        store.dispose()


def _value(stored: Any) -> Any:
    """A JSON document as the driver hands it over: parsed (`jsonb`) or text (SQLite)."""
    return json_text.parse(stored) if isinstance(stored, str) else stored


def _run_answer(store: Store) -> Any:
    with store.read() as conn:
        return run_docs(conn, [uuid.UUID(_run_id(n)) for n in range(TRAINING + 2)])
