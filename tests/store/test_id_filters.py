"""`id_filters`: "column is one of these ids" for any number of ids, on both databases."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from upstream.model.identity import namespace_id
from upstream.store import schema as t
from upstream.store.dialect import (
    CHUNK,
    ByIds,
    id_filters,
    id_groups,
    id_text,
    in_id_order,
    text_id_filters,
)
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


def test_ids_as_text_round_trip(store: Store) -> None:
    """`id_text` writes a stored uuid as `str(uuid)` does, NULL as None, and
    `text_id_filters` finds rows by that text, past one IN list's worth on SQLite."""
    stored = add_namespaces(store, [f"ns{i}" for i in range(CHUNK + 10)])
    wanted = [str(i) for i in stored[::3]] + [str(uuid.uuid4())]
    c = t.namespaces.c
    with store.read() as conn:
        text = id_text(c.id, conn.dialect.name)
        found: set[str] = set()
        for matches in text_id_filters(conn, c.id, wanted):
            found.update(conn.execute(sa.select(text).where(matches)).scalars())
        null = conn.execute(sa.select(id_text(sa.null().cast(sa.Uuid), conn.dialect.name)))
        assert null.scalar() is None
        assert list(text_id_filters(conn, c.id, [])) == []
    assert found == {str(i) for i in stored[::3]}


def test_id_groups_are_the_statements_text_id_filters_makes(store: Store) -> None:
    """One group per statement: every id once, sorted, in one group on PostgreSQL and in
    groups of CHUNK on SQLite, each group one filter of each column."""
    ids = [str(uuid.UUID(int=i)) for i in range(CHUNK + 5)] * 2
    with store.read() as conn:
        groups = list(id_groups(conn, reversed(ids)))
        assert [i for group in groups for i in group] == sorted(set(ids))
        sizes = [CHUNK + 5] if store.dialect == "postgresql" else [CHUNK, 5]
        assert [len(group) for group in groups] == sizes
        for group in groups:
            assert len(list(text_id_filters(conn, t.namespaces.c.id, group))) == 1
        assert list(id_groups(conn, [])) == []


def test_ids_are_put_in_the_order_sorted_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """`in_id_order` sorts UUIDs by their integers without calling `UUID.__lt__` (a Python
    call per comparison), in the order `sorted` gives; other keys sort as they are."""
    ids = [uuid.UUID(int=n) for n in (2**127 + 5, 3, 2**64, 0, 2**128 - 1)] + [uuid.uuid4()]
    expected = sorted(ids)

    def refused(self: uuid.UUID, other: uuid.UUID) -> bool:
        raise AssertionError("compared in Python")

    monkeypatch.setattr(uuid.UUID, "__lt__", refused)
    assert in_id_order(set(ids)) == expected
    assert in_id_order(["b", "a", "c"]) == ["a", "b", "c"]
    assert in_id_order([]) == []


def test_a_lookup_by_ids_is_made_once_and_finds_past_one_in_list(store: Store) -> None:
    """`ByIds`: the statement is the same object on every use (made once per dialect), it
    takes the ids and its other parameters when run, and splits the ids as `id_filters`."""
    stored = add_namespaces(store, [f"ns{i}" for i in range(CHUNK + 10)])
    c = t.namespaces.c
    lookup = ByIds(c.id, lambda ids: sa.select(c.id).where(ids, c.name != sa.bindparam("not")))
    with store.read() as conn:
        assert lookup.statement(conn) is lookup.statement(conn)
        found = [
            i for result in lookup.run(conn, stored, **{"not": "ns0"}) for i in result.scalars()
        ]
        assert list(lookup.run(conn, [])) == []
    assert sorted(found) == sorted(stored[1:])
