"""`Store.read_once`: a read of one statement outside any transaction, started again in a
read transaction when it needs a second, on both stores."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.engine import Store

_COUNT = sa.select(sa.func.count()).select_from(t.namespaces)


def _add_namespace(conn: Connection) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    row = {"id": uuid.uuid4(), "name": "added", "created_at": now, "updated_at": now}
    conn.execute(sa.insert(t.namespaces).values(row))


def test_two_statements_of_a_read_once_see_one_snapshot(store: Store) -> None:
    """A write committed between the two statements: outside a transaction the second would
    see it and the first not; the read starts again in a transaction, and both see it."""
    runs: list[int] = []

    def work(conn: Connection) -> tuple[int, int]:
        first = conn.execute(_COUNT).scalar_one()
        if not runs:
            store.write(_add_namespace)
        runs.append(first)
        return first, conn.execute(_COUNT).scalar_one()

    before = store.read_once(lambda conn: conn.execute(_COUNT).scalar_one())
    assert store.read_once(work) == (before + 1, before + 1)
    assert runs == [before, before + 1]


def test_a_read_once_of_one_statement_sends_no_begin_on_sqlite(tmp_path: object) -> None:
    """SQLite: the one statement is a transaction of its own, no BEGIN or COMMIT around it;
    a second statement reads again inside BEGIN."""
    store = Store(f"sqlite:///{tmp_path}/once.db", pool_size=1)
    try:
        store.read_once(lambda conn: conn.execute(sa.text("SELECT 1")))
        raw = store.engine.raw_connection()
        sent: list[str] = []
        raw.dbapi_connection.set_trace_callback(sent.append)  # type: ignore[union-attr]
        raw.close()
        assert store.read_once(lambda conn: conn.execute(sa.text("SELECT 1")).scalar()) == 1
        assert sent == ["SELECT 1"]
        sent.clear()

        def twice(conn: Connection) -> None:
            conn.execute(sa.text("SELECT 1"))
            conn.execute(sa.text("SELECT 2"))

        store.read_once(twice)
        assert sent == ["SELECT 1", "BEGIN", "SELECT 1", "SELECT 2", "COMMIT"]
    finally:
        store.dispose()
