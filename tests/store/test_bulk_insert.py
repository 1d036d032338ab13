"""`insert_rows_ignoring` and `insert_rows`, the bulk inserts of the write path: every value
stored as its column type stores it, the rows already there left alone, and exactly the new
keys returned (or, without a key, every row inserted). SQLite takes multi-row VALUES lists,
PostgreSQL one `unnest` of arrays."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from upstream.store import schema as t
from upstream.store.dialect import insert_rows, insert_rows_ignoring
from upstream.store.engine import Store
from upstream.store.months import insert_by_month

NOW = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def namespace_row(name: str) -> dict[str, Any]:
    return {
        "id": uuid.uuid5(uuid.NAMESPACE_URL, name),
        "name": name,
        "created_at": NOW,
        "updated_at": NOW,
    }


def dataset_row(namespace: dict[str, Any], name: str, facets: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace['name']}/{name}"),
        "namespace_id": namespace["id"],
        "namespace": namespace["name"],
        "name": name,
        "description": None,
        "source_name": "warehouse ✓",
        "fields": [{"name": "id", "type": "bigint"}],
        "facets": facets,
        "declared_at": None,
        "created_at": NOW,
        "updated_at": NOW,
    }


def test_new_rows_are_stored_as_given_and_their_keys_returned(store: Store) -> None:
    space = namespace_row("db")
    first = dataset_row(space, "orders", {"stats": {"rows": 2**70, "ratio": 1e-07}})
    second = dataset_row(space, "customers", {"owner": "é"})
    assert store.write(lambda c: insert_rows_ignoring(c, t.namespaces, [space], "id")) == {
        space["id"]
    }
    new = store.write(lambda c: insert_rows_ignoring(c, t.datasets, [first, second], "id"))
    assert new == {first["id"], second["id"]}
    with store.read() as conn:
        rows = {r.name: r._asdict() for r in conn.execute(sa.select(t.datasets))}
    assert set(rows) == {"orders", "customers"}
    stored = rows["orders"]
    assert stored["id"] == first["id"]
    assert stored["namespace_id"] == space["id"]
    assert stored["facets"] == {"stats": {"rows": 2**70, "ratio": 1e-07}}  # beyond 64 bits
    assert stored["fields"] == [{"name": "id", "type": "bigint"}]
    assert stored["source_name"] == "warehouse ✓"
    assert stored["description"] is None
    assert stored["created_at"] == NOW
    assert stored["declared_at"] is None


def test_rows_already_stored_are_left_alone_and_not_returned(store: Store) -> None:
    space = namespace_row("db")
    kept = dataset_row(space, "orders", {"v": 1})
    store.write(lambda c: insert_rows_ignoring(c, t.namespaces, [space], "id"))
    store.write(lambda c: insert_rows_ignoring(c, t.datasets, [kept], "id"))
    again = {**kept, "facets": {"v": 2}}
    fresh = dataset_row(space, "refunds", {})
    # More rows than one SQLite statement takes, so the chunks are exercised too.
    many = [dataset_row(space, f"t{i}", {"i": i}) for i in range(1203)]
    new = store.write(lambda c: insert_rows_ignoring(c, t.datasets, [again, fresh, *many], "id"))
    assert new == {fresh["id"], *(row["id"] for row in many)}
    with store.read() as conn:
        facets = conn.execute(
            sa.select(t.datasets.c.facets).where(t.datasets.c.id == kept["id"])
        ).scalar_one()
        count = conn.execute(sa.select(sa.func.count()).select_from(t.datasets)).scalar_one()
    assert facets == {"v": 1}
    assert count == 1 + 1 + 1203


def test_event_keys_are_returned_as_the_text_they_are(store: Store) -> None:
    row = {
        "event_key": "ab" * 32,
        "event_type": "RunEvent",
        "event_kind": "START",
        "event_time": NOW,
        "received_at": NOW,
        "run_id": uuid.uuid4(),
        "job_namespace": "ns",
        "job_name": "job",
        "dataset_namespace": None,
        "dataset_name": None,
        "payload_zstd": b"\x00\xff",
    }
    # Events are kept by month (`upstream.store.months`): their insert adds the run's month.
    assert store.write(lambda c: insert_by_month(c, t.events, [row], "event_key")) == {"ab" * 32}
    assert store.write(lambda c: insert_by_month(c, t.events, [row], "event_key")) == set()
    with store.read() as conn:
        stored = conn.execute(sa.select(t.events.c.payload_zstd, t.events.c.run_id)).one()
    assert tuple(stored) == (b"\x00\xff", row["run_id"])


SET_ID = uuid.uuid5(uuid.NAMESPACE_URL, "set")


def edge_rows(count: int) -> list[dict[str, Any]]:
    """`count` edges of the set `SET_ID`: NULLs, booleans, ids, text."""
    source, target = (uuid.uuid5(uuid.NAMESPACE_URL, name) for name in ("in", "out"))
    return [
        {
            "set_id": SET_ID,
            "position": position,
            "origin": "column_lineage",
            "rank": 2,
            "implied": position == 0,
            "source_type": "dataset",
            "source_dataset_id": source,
            "source_field": f"f{position} ✓",
            "source_job_id": None,
            "source_run_id": None,
            "target_type": "dataset",
            "target_dataset_id": target,
            "target_field": None if position == 0 else f"g{position}",
            "target_job_id": None,
            "target_run_id": None,
            "transformations_id": uuid.uuid5(uuid.NAMESPACE_URL, f"t{position % 2}"),
        }
        for position in range(count)
    ]


def transformation_rows(count: int) -> list[dict[str, Any]]:
    """`count` edges' transformations: JSON beyond 64 bits, floats orjson writes apart."""
    return [
        {
            "id": uuid.uuid5(uuid.NAMESPACE_URL, f"t{number}"),
            "transformations": [
                {"type": "DIRECT", "masking": number % 2 == 1, "rows": 2**70 + number, "r": 1e-07}
            ],
        }
        for number in range(count)
    ]


def test_json_rows_without_a_key_are_all_inserted_as_given(store: Store) -> None:
    """JSON documents, integers beyond 64 bits included, read back as given, in more rows
    than one SQLite statement takes (and than a PostgreSQL COPY is made for)."""
    rows = transformation_rows(1203)
    store.write(lambda c: insert_rows(c, t.edge_transformations, rows))
    with store.read() as conn:
        stored = [r._asdict() for r in conn.execute(sa.select(t.edge_transformations))]
    key = itemgetter("id")
    assert sorted(stored, key=key) == sorted(rows, key=key)


def test_rows_without_a_key_are_all_inserted_as_given(store: Store) -> None:
    """A set's edges: NULLs, booleans and ids stored as their columns store them, in
    more rows than one SQLite statement takes; a row naming no stored set is refused (its
    foreign key), not ignored."""
    rows = edge_rows(1203)
    set_id, target = SET_ID, rows[0]["target_dataset_id"]
    lineage_set = {"id": set_id, "checksum": "c", "target_dataset_id": target, "rank": 2}
    store.write(lambda c: insert_rows(c, t.lineage_sets, [{**lineage_set, "created_at": NOW}]))
    store.write(lambda c: insert_rows(c, t.lineage_set_edges, rows))
    with store.read() as conn:
        stored = [
            r._asdict()
            for r in conn.execute(
                sa.select(t.lineage_set_edges).order_by(t.lineage_set_edges.c.position)
            )
        ]
    assert stored == rows
    orphan = {**rows[5], "set_id": uuid.uuid5(uuid.NAMESPACE_URL, "no such set")}
    with pytest.raises(sa.exc.IntegrityError):
        store.write(lambda c: insert_rows(c, t.lineage_set_edges, [orphan]))
    store.write(lambda c: insert_rows(c, t.lineage_set_edges, []))  # nothing to insert
    with store.read() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(t.lineage_set_edges))
        assert count.scalar_one() == 1203


def test_sqlite_makes_a_tables_conversions_once(
    sqlite_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each column's conversion to what SQLite stores is made once per table and columns,
    not again by every insert (a one-event write inserts into a dozen tables). SQLite only:
    PostgreSQL's inserts send arrays, which the driver converts."""
    path = tmp_path / "upstream.db"
    shutil.copy(sqlite_template, path)
    store = Store(f"sqlite:///{path}")
    store.write(lambda conn: insert_rows_ignoring(conn, t.namespaces, [namespace_row("a")], "id"))
    made: list[Any] = []
    real = sa.types.TypeEngine.dialect_impl

    def counting(self: Any, dialect: Any) -> Any:
        made.append(self)
        return real(self, dialect)

    monkeypatch.setattr(sa.types.TypeEngine, "dialect_impl", counting)
    try:
        store.write(
            lambda conn: insert_rows_ignoring(conn, t.namespaces, [namespace_row("b")], "id")
        )
    finally:
        store.dispose()
    assert made == []
