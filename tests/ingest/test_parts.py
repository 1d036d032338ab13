"""Parts seen before are not read again; a part changed in one byte is read and stored; a
malformed part is refused with its own path every time (`upstream.ingest.parts`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import column_lineage, ds, run_event, schema_facet
from tests.readback import edges
from upstream.ingest.documents import translate_document
from upstream.ingest.parts import COLUMN_LINEAGE_PARTS, SCHEMA_PARTS, PartCache
from upstream.store.engine import Store

NS = "parts"


@pytest.fixture(autouse=True)
def _empty_caches() -> Iterator[None]:
    SCHEMA_PARTS.clear()
    COLUMN_LINEAGE_PARTS.clear()
    yield
    SCHEMA_PARTS.clear()
    COLUMN_LINEAGE_PARTS.clear()


def _event(
    run_id: str, *, event_type: str = "COMPLETE", amount_type: str = "DECIMAL", rows: int = 1
) -> dict[str, Any]:
    """job `load` reads `raw` and writes `sales` (id from id, amount from amount); the
    output's statistics change with every run."""
    schema = schema_facet(("id", "INT"), ("amount", amount_type))
    lineage = column_lineage({"id": [(NS, "raw", "id")], "amount": [(NS, "raw", "amount")]})
    statistics = {"_producer": "p", "_schemaURL": "s", "rowCount": rows}
    return run_event(
        (NS, "load"),
        run_id=run_id,
        event_type=event_type,
        inputs=[ds(NS, "raw", schema=schema)],
        outputs=[
            ds(NS, "sales", schema=schema, columnLineage=lineage, outputStatistics=statistics)
        ],
    )


def _counts() -> tuple[int, int]:
    return SCHEMA_PARTS.parts_read, COLUMN_LINEAGE_PARTS.parts_read


def test_a_part_seen_before_is_not_read_again() -> None:
    first = translate_document(_event(str(uuid.uuid4()), event_type="START"))
    # One schema (the input's and the output's are the same bytes), one column lineage.
    assert _counts() == (1, 1)
    again = translate_document(_event(str(uuid.uuid4()), rows=99))
    assert _counts() == (1, 1)
    for facts in (first, again):
        sales = next(d for d in facts.datasets if d.ref.name == "sales")
        assert sales.fields == [
            {"name": "id", "type": "INT"},
            {"name": "amount", "type": "DECIMAL"},
        ]
        field_edges = {
            (e.source.dataset.name, e.source.field, e.target.dataset.name, e.target.field)
            for e in facts.edges
            if not e.implied
        }
        assert field_edges == {("raw", "id", "sales", "id"), ("raw", "amount", "sales", "amount")}
    # Each event's edges are its own run's.
    assert {e.run_id for e in first.edges} == {first.record.run_id}
    assert {e.run_id for e in again.edges} == {again.record.run_id}


def test_a_part_changed_in_one_byte_is_read_and_stored(client: TestClient, store: Store) -> None:
    assert client.post("/api/v1/lineage", json=_event(str(uuid.uuid4()))).status_code == 201
    assert _counts() == (1, 1)
    changed = _event(str(uuid.uuid4()), amount_type="DECIMAM")  # one byte of the schema
    assert client.post("/api/v1/lineage", json=changed).status_code == 201
    # The new schema is read; the column lineage is the same part as before.
    assert _counts() == (2, 1)
    answer = client.get(f"/api/v1/namespaces/{NS}/datasets/sales").json()
    assert [(f["name"], f["type"]) for f in answer["fields"]] == [
        ("id", "INT"),
        ("amount", "DECIMAM"),
    ]
    assert ("parts/raw#amount", "parts/sales#amount") in edges(store)


def test_a_malformed_part_is_refused_with_its_own_path_every_time(
    client: TestClient, store: Store
) -> None:
    good = _event(str(uuid.uuid4()))
    assert client.post("/api/v1/lineage", json=good).status_code == 201
    bad = _event(str(uuid.uuid4()))  # the input's schema stays as it was
    bad["outputs"][0]["facets"]["schema"] = schema_facet(("id", "INT"), (" ", "DECIMAL"))
    unseen = _event(str(uuid.uuid4()))  # its parts are all in the cache
    answer = client.post("/api/v1/lineage", json=[unseen, bad])
    assert answer.status_code == 422
    assert "[1].outputs[0].facets.schema.fields[1].name" in answer.text
    alone = client.post("/api/v1/lineage", json=bad)
    assert alone.status_code == 422
    assert "outputs[0].facets.schema.fields[1].name" in alone.text
    assert SCHEMA_PARTS.parts_read == 1  # the malformed schema was never kept
    runs = client.get(f"/api/v1/namespaces/{NS}/jobs/load/runs").json()["runs"]
    assert [r["id"] for r in runs] == [good["run"]["runId"]]


def test_the_cache_keeps_the_most_recently_used_parts() -> None:
    cache: PartCache[str] = PartCache(capacity=2)
    for key in (b"a", b"b", b"a", b"c"):  # "b" is the least recently used when "c" comes
        cache.read(key, key.decode)
    assert cache.parts_read == 3
    cache.read(b"a", str)
    cache.read(b"c", str)
    assert cache.parts_read == 3
    assert cache.read(b"b", lambda: "read again") == "read again"
    assert cache.parts_read == 4
