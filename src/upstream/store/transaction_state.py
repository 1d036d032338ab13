"""What a write keeps for the rest of its transaction (the changes it recorded, the sets and
contents it will store last, the months it looked up, what it leaves to do once it committed),
kept with the connection and tagged with the transaction: a connection outlives its
transactions in the pool, and nothing a rolled-back transaction kept may be seen by the next
one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from upstream.store.engine import Store

T = TypeVar("T")
#: Work to do once the transaction committed (`after_commit`), by key.
_AFTER_COMMIT = "upstream.after_commit"


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


def after_commit(conn: Connection, key: str, action: Callable[[Store], None]) -> None:
    """Have `action` called with the store once this write transaction has committed
    (`Store.write` calls it, never after a rollback); a later action under the same `key`
    replaces the earlier one. It runs on the writer's thread before the write returns, so
    anything long goes to `Store.in_background`."""
    actions: dict[str, Callable[[Store], None]] = kept(conn, _AFTER_COMMIT, dict)
    actions[key] = action


def actions_after_commit(conn: Connection) -> list[Callable[[Store], None]]:
    """The actions this transaction left for after its commit, no longer kept."""
    held: dict[str, Callable[[Store], None]] | None = taken(conn, _AFTER_COMMIT)
    return [] if held is None else list(held.values())
