"""What a write keeps for the rest of its transaction (the changes it recorded, the sets and
contents it will store last, the months it looked up, the dictionary it trained), kept with
the connection and tagged with the transaction: a connection outlives its transactions in
the pool, and nothing a rolled-back transaction kept may be seen by the next one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

T = TypeVar("T")


def kept(conn: Connection, key: str, make: Callable[[], T]) -> T:
    """What this transaction keeps under `key`, made by `make` on first use."""
    transaction = conn.get_transaction()
    if transaction is None:
        raise RuntimeError(f"{key} is kept inside a transaction")
    held = conn.info.get(key)
    if held is None or held[0] is not transaction:
        held = conn.info[key] = (transaction, make())
    value: T = held[1]
    return value


def kept_if_any(conn: Connection, key: str) -> Any | None:
    """What this transaction keeps under `key`; None when it keeps nothing there."""
    held = conn.info.get(key)
    if held is None or held[0] is not conn.get_transaction():
        return None
    return held[1]


def taken(conn: Connection, key: str) -> Any | None:
    """What this transaction keeps under `key`, no longer kept; None when it kept nothing."""
    held = conn.info.pop(key, None)
    if held is None or held[0] is not conn.get_transaction():
        return None
    return held[1]
