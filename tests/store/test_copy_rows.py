"""Bulk inserts of `COPY_ROWS` rows or more go by binary COPY on PostgreSQL
(`upstream.store.copy_rows`) and store exactly what the `unnest` insert (and SQLite's VALUES
lists) store: the same values, the stored rows left alone, exactly the new keys returned, a
refused row refused as an IntegrityError."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tests.conftest import truncate_tables
from tests.store.test_bulk_insert import SET_ID, edge_rows
from upstream.model.errors import StoreUnavailable
from upstream.store import schema as t
from upstream.store.dialect import COPY_ROWS, insert_rows, insert_rows_ignoring
from upstream.store.engine import Store, Timeouts
from upstream.store.months import insert_by_month

NOW = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


@pytest.fixture
def statements(store: Store) -> Iterator[list[str]]:
    """The SQL text of every statement SQLAlchemy sends (COPY goes by the driver alone)."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    yield sent
    sa.event.remove(store.engine, "before_cursor_execute", record)


def event_row(number: int, payload: bytes | None = None) -> dict[str, Any]:
    return {
        "event_key": f"{number:064x}",
        "event_type": "RunEvent",
        "event_kind": "COMPLETE" if number % 2 else None,
        "event_time": NOW + timedelta(microseconds=number),
        "received_at": NOW,
        "run_id": uuid.uuid5(uuid.NAMESPACE_URL, f"run{number % 7}"),
        "job_namespace": "ns",
        "job_name": f"job {number}",
        "dataset_namespace": None,
        "dataset_name": None,
        # Any bytes, as binary COPY sends them: NUL, a backslash, a tab, non-UTF-8.
        "payload_zstd": payload or b"\x28\xb5\x2f\xfd\x00\\\t\xff" + bytes([number % 256]),
    }


def store_set(store: Store) -> None:
    row = {"id": SET_ID, "checksum": "c", "target_dataset_id": None, "rank": 2, "created_at": NOW}
    store.write(lambda c: insert_rows(c, t.lineage_sets, [row]))


def inserts_into(sent: list[str], table: str) -> list[str]:
    return [s for s in sent if s.startswith(f"INSERT INTO {table} ")]


def test_many_rows_without_a_key_go_by_copy(store: Store, statements: list[str]) -> None:
    """(That they are stored as given is
    `test_bulk_insert.py::test_rows_without_a_key_are_all_inserted_as_given`, 1,203 rows, and
    JSON beyond 64 bits `::test_json_rows_without_a_key_are_all_inserted_as_given`.)"""
    store_set(store)
    rows = edge_rows(COPY_ROWS + 17)
    store.write(lambda c: insert_rows(c, t.lineage_set_edges, rows))
    with store.read() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(t.lineage_set_edges))
        assert count.scalar_one() == COPY_ROWS + 17
    # One VALUES list on SQLite; no INSERT at all on PostgreSQL.
    sent = inserts_into(statements, "lineage_set_edges")
    assert len(sent) == (0 if store.dialect == "postgresql" else 1)


def test_fewer_rows_than_copy_pays_for_go_by_one_insert(
    store: Store, statements: list[str]
) -> None:
    store_set(store)
    rows = edge_rows(COPY_ROWS - 1)
    store.write(lambda c: insert_rows(c, t.lineage_set_edges, rows))
    assert len(inserts_into(statements, "lineage_set_edges")) == 1
    with store.read() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(t.lineage_set_edges))
        assert count.scalar_one() == COPY_ROWS - 1


def test_a_refused_row_is_refused_as_an_integrity_error(store: Store) -> None:
    """A set's edges have no key (migration 0032): what refuses a row is its set's foreign
    key, and the whole COPY goes with it."""
    store_set(store)
    rows = edge_rows(COPY_ROWS)
    store.write(lambda c: insert_rows(c, t.lineage_set_edges, rows))
    extra = [{**row, "position": 1000 + i} for i, row in enumerate(edge_rows(COPY_ROWS))]
    orphan = {**rows[3], "set_id": uuid.uuid5(uuid.NAMESPACE_URL, "no such set")}
    with pytest.raises(sa.exc.IntegrityError):
        store.write(lambda c: insert_rows(c, t.lineage_set_edges, [*extra, orphan]))
    with store.read() as conn:  # nothing of the refused insert stayed
        count = conn.execute(sa.select(sa.func.count()).select_from(t.lineage_set_edges))
        assert count.scalar_one() == COPY_ROWS


def test_staged_copy_skips_stored_rows_and_returns_only_the_new_keys(
    store: Store, statements: list[str]
) -> None:
    before = [event_row(n, payload=b"kept") for n in range(0, 40)]
    assert store.write(lambda c: insert_by_month(c, t.events, before, "event_key")) == {
        row["event_key"] for row in before
    }
    first = [event_row(n) for n in range(20, 20 + COPY_ROWS)]  # 20 of them stored already
    second = [event_row(n) for n in range(10, 30 + 2 * COPY_ROWS)]

    def both(conn: Any) -> tuple[set[Any], set[Any]]:
        return (
            insert_by_month(conn, t.events, first, "event_key"),
            insert_by_month(conn, t.events, second, "event_key"),
        )

    new_first, new_second = store.write(both)
    assert new_first == {f"{n:064x}" for n in range(40, 20 + COPY_ROWS)}
    assert new_second == {f"{n:064x}" for n in range(20 + COPY_ROWS, 30 + 2 * COPY_ROWS)}
    with store.read() as conn:
        stored = {
            r.event_key: r for r in conn.execute(sa.select(t.events).order_by(t.events.c.event_key))
        }
    assert len(stored) == 30 + 2 * COPY_ROWS
    assert stored[f"{5:064x}"].payload_zstd == b"kept"
    assert stored[f"{25:064x}"].payload_zstd == b"kept"  # stored before: left alone
    fresh = event_row(41)
    assert {k: getattr(stored[fresh["event_key"]], k) for k in fresh} == fresh
    staged = [s for s in statements if "FROM stage_events_" in s]
    assert len(staged) == (2 if store.dialect == "postgresql" else 0)
    # The staging table is emptied at commit: the next transaction starts from nothing.
    later = [event_row(n) for n in range(1000, 1000 + COPY_ROWS)]
    assert store.write(lambda c: insert_by_month(c, t.events, later, "event_key")) == {
        row["event_key"] for row in later
    }


def test_a_copy_that_waits_out_the_lock_timeout_is_an_outage(postgres_server: str) -> None:
    """The store unavailable (a 503 to the client, retried by Kafka's consumer), as when an
    INSERT waits out the lock timeout: not an unexplained failure."""
    truncate_tables(postgres_server)
    store = Store(postgres_server, timeouts=Timeouts(lock=0.2))
    holder = sa.create_engine(postgres_server)
    try:
        store_set(store)
        with holder.begin() as held:
            held.exec_driver_sql("LOCK TABLE lineage_set_edges IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreUnavailable, match="lock timeout"):
                store.write(lambda c: insert_rows(c, t.lineage_set_edges, edge_rows(COPY_ROWS)))
    finally:
        holder.dispose()
        store.dispose()


def test_skipping_inserts_outside_the_staged_tables_stay_one_statement(
    store: Store, statements: list[str]
) -> None:
    """Only the raw events pay for a staging table's extra statements (`STAGED_COPY`)."""
    rows = [
        {"id": uuid.uuid5(uuid.NAMESPACE_URL, f"ns{n}"), "name": f"ns{n}", "description": None,
         "created_at": NOW, "updated_at": NOW}
        for n in range(COPY_ROWS + 3)
    ]  # fmt: skip
    new = store.write(lambda c: insert_rows_ignoring(c, t.namespaces, rows, "id"))
    assert new == {row["id"] for row in rows}
    assert len(inserts_into(statements, "namespaces")) == 1
    assert not [s for s in statements if "stage_" in s]
