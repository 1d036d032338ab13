"""Advisory transaction locks: each is asked of PostgreSQL once per transaction."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store.dialect import advisory_xact_locks
from upstream.store.engine import Store

A, B, C = (uuid.UUID(int=n << 64) for n in (1, 2, 3))  # lock keys 1, 2 and 3


def _asked(store: Store) -> list[tuple[str, list[int]]]:
    """Each advisory lock statement the store sends: its function and keys."""
    asked: list[tuple[str, list[int]]] = []

    def note(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "advisory_xact_lock" in statement:
            function = statement.removeprefix("SELECT ").partition("(")[0]
            asked.append((function, parameters["keys"]))

    sa.event.listen(store.engine, "before_cursor_execute", note)
    return asked


def _held(conn: Connection) -> dict[int, set[str]]:
    rows = conn.exec_driver_sql(
        "SELECT objid, mode FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    )
    held: dict[int, set[str]] = {}
    for key, mode in rows:
        held.setdefault(int(key), set()).add(mode)
    return held


def test_a_lock_held_is_not_asked_again(store: Store) -> None:
    asked = _asked(store)
    seen: dict[int, set[str]] = {}

    def work(conn: Connection) -> None:
        advisory_xact_locks(conn, [A])
        advisory_xact_locks(conn, [B, A])  # A is held: B alone is asked
        advisory_xact_locks(conn, [A, B], shared=True)  # exclusive covers shared
        advisory_xact_locks(conn, [C], shared=True)
        advisory_xact_locks(conn, [C])  # held shared only: asked again, exclusive
        advisory_xact_locks(conn, [A, B, C])
        if store.dialect == "postgresql":
            seen.update(_held(conn))

    store.write(work)
    store.write(lambda conn: advisory_xact_locks(conn, [A]))  # a new transaction holds none
    if store.dialect != "postgresql":
        assert asked == []  # SQLite's write lock serialises writers: no statement
        return
    exclusive, shared = "pg_advisory_xact_lock", "pg_advisory_xact_lock_shared"
    assert asked == [
        (exclusive, [1]),
        (exclusive, [2]),
        (shared, [3]),
        (exclusive, [3]),
        (exclusive, [1]),
    ]
    assert seen == {1: {"ExclusiveLock"}, 2: {"ExclusiveLock"}, 3: {"ShareLock", "ExclusiveLock"}}
