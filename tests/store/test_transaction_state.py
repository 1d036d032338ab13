"""What a write keeps for the rest of its transaction (`upstream.store.transaction_state`):
made once per transaction, never seen by the next transaction on the same connection,
whether the one before committed or rolled back."""

from __future__ import annotations

import pytest

from upstream.store.engine import Store
from upstream.store.transaction_state import kept, kept_if_any, taken

KEY = "tests.transaction_state"


def test_kept_once_per_transaction_and_never_by_the_next(store: Store) -> None:
    with store.engine.connect() as conn:
        with conn.begin():
            assert kept_if_any(conn, KEY) is None
            first = kept(conn, KEY, list)
            first.append("a")
            assert kept(conn, KEY, list) is first
            assert kept_if_any(conn, KEY) == ["a"]
        with conn.begin():  # the same connection, the next transaction
            assert kept_if_any(conn, KEY) is None
            kept(conn, KEY, list).append("b")
            conn.rollback()
        with conn.begin():  # after a rollback too
            assert kept(conn, KEY, list) == []


def test_taken_is_kept_no_more(store: Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        kept(conn, KEY, dict)["x"] = 1
        assert taken(conn, KEY) == {"x": 1}
        assert taken(conn, KEY) is None
        assert kept_if_any(conn, KEY) is None


def test_nothing_is_kept_outside_a_transaction(store: Store) -> None:
    with (
        store.engine.connect() as conn,
        pytest.raises(RuntimeError, match="inside a transaction"),
    ):
        kept(conn, KEY, list)
