"""Datasets and jobs named again: recognised by the hash of their content (`content_digest`),
merged as before when anything differs, and rows written before the hash existed still
merged right (migration 0010)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tests.builders import column_lineage, ds, run_event, schema_facet
from upstream.ingest.service import ingest_documents
from upstream.model import json_text
from upstream.store import schema as t
from upstream.store import writer
from upstream.store.engine import Store

JOB = ("airflow", "load_orders")
OTHER_JOB = ("airflow", "report")
NS = "postgres://db:5432"
SCHEMA = {"schema": schema_facet(("id", "int"), ("total", "decimal"))}
DOCS = {"documentation": {"description": "orders of the shop"}}


def _dataset(store: Store, name: str) -> dict[str, Any]:
    with store.read() as conn:
        query = sa.select(t.datasets).where(t.datasets.c.name == name)
        return dict(conn.execute(query).mappings().one())


def _job(store: Store, name: str) -> dict[str, Any]:
    with store.read() as conn:
        return dict(conn.execute(sa.select(t.jobs).where(t.jobs.c.name == name)).mappings().one())


def _read_orders(**facets: Any) -> dict[str, Any]:
    return run_event(JOB, inputs=[ds(NS, "orders", **facets)], job_facets=DOCS)


def test_a_dataset_and_a_job_named_again_unchanged_keep_their_rows(store: Store) -> None:
    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    first, first_job = _dataset(store, "orders"), _job(store, "load_orders")
    assert first["content_digest"] is not None
    assert first_job["content_digest"] is not None

    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)  # another run

    assert _dataset(store, "orders") == first  # updated_at included
    assert _job(store, "load_orders") == first_job


def test_a_changed_facet_is_merged_and_the_hash_follows(store: Store) -> None:
    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    first = _dataset(store, "orders")
    renamed = {"documentation": {"description": "every order"}}

    ingest_documents(store, [_read_orders(**renamed)], batch=False)

    after = _dataset(store, "orders")
    assert after["facets"] == {**SCHEMA, **renamed}
    assert after["fields"] == first["fields"]  # no schema facet sent: the fields stay
    assert after["description"] == "every order"
    assert after["updated_at"] > first["updated_at"]
    assert after["content_digest"] not in (None, first["content_digest"])
    # The first content again: the hash is the first one's, so the next same event is
    # recognised.
    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    assert _dataset(store, "orders")["content_digest"] == first["content_digest"]


def test_fewer_facets_than_stored_change_nothing(store: Store) -> None:
    """A mart written with `columnLineage` and read elsewhere without it: the two events'
    hashes differ, the merge keeps every facet, and the row is not touched."""
    lineage = {"columnLineage": column_lineage({"total": [(NS, "orders", "total")]})}
    written = ds(NS, "mart", **SCHEMA, **lineage)
    ingest_documents(
        store, [run_event(JOB, inputs=[ds(NS, "orders")], outputs=[written])], batch=False
    )
    first = _dataset(store, "mart")

    read = ds(NS, "mart", **SCHEMA)
    ingest_documents(store, [run_event(OTHER_JOB, inputs=[read])], batch=False)

    assert _dataset(store, "mart") == first
    assert set(first["facets"]) == {"schema", "columnLineage"}


def test_rows_written_before_the_hash_are_merged_and_get_one(store: Store) -> None:
    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    first, first_job = _dataset(store, "orders"), _job(store, "load_orders")
    with store.engine.begin() as conn:  # as migration 0010 leaves an older row
        conn.execute(t.datasets.update().values(content_digest=None))
        conn.execute(t.jobs.update().values(content_digest=None))

    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)

    assert _dataset(store, "orders") == first  # the hash written, nothing else changed
    assert _job(store, "load_orders") == first_job

    with store.engine.begin() as conn:
        conn.execute(t.datasets.update().values(content_digest=None))
    changed = {"documentation": {"description": "x"}}
    ingest_documents(store, [_read_orders(**changed)], batch=False)
    after = _dataset(store, "orders")
    assert after["description"] == "x"
    assert after["facets"]["schema"] == SCHEMA["schema"]
    assert after["content_digest"] not in (None, first["content_digest"])


def test_rows_named_again_unchanged_are_not_parsed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The point of the hash: a second run naming the same dataset and job with the same
    content reads them with their hashes, in one statement each, and never parses their
    facets."""
    ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    selects: list[str] = []
    parsed: list[Any] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            selects.append(" ".join(statement.split()))

    def parse(text: Any) -> Any:
        parsed.append(text)
        return json_text.parse(text)

    monkeypatch.setattr(writer, "parse", parse)
    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        ingest_documents(store, [_read_orders(**SCHEMA, **DOCS)], batch=False)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)

    for table in ("datasets", "jobs"):
        assert len([s for s in selects if f"{table}.content_digest" in s]) == 1, selects
    assert parsed == []
