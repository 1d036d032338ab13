"""`id_filters`: "column is one of these ids" for any number of ids, on both databases."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa

from upstream.model.identity import namespace_id
from upstream.store import schema as t
from upstream.store.dialect import CHUNK, id_filters
from upstream.store.engine import Store

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def add_namespaces(store: Store, names: list[str]) -> list[uuid.UUID]:
    rows = [{"id": namespace_id(n), "name": n, "created_at": NOW, "updated_at": NOW} for n in names]
    store.write(lambda conn: conn.execute(sa.insert(t.namespaces), rows))
    return [r["id"] for r in rows]


def test_more_ids_than_one_in_list_holds(store: Store) -> None:
    stored = add_namespaces(store, [f"ns{i}" for i in range(CHUNK + 500)])
    unknown = [uuid.uuid4() for _ in range(CHUNK)]
    wanted = stored[::2] + unknown + stored[:10]  # five of the first ten are repeats
    found: set[uuid.UUID] = set()
    statements = 0
    with store.read() as conn:
        for matches in id_filters(conn, t.namespaces.c.id, wanted):
            statements += 1
            found.update(conn.execute(sa.select(t.namespaces.c.id).where(matches)).scalars())
    assert found == set(stored[::2]) | set(stored[:10])
    # PostgreSQL takes every id as one array parameter; SQLite an IN list per CHUNK ids
    # (3,255 distinct ids here).
    assert statements == (1 if store.dialect == "postgresql" else 2)


def test_no_ids_need_no_statement(store: Store) -> None:
    with store.read() as conn:
        assert list(id_filters(conn, t.namespaces.c.id, [])) == []
