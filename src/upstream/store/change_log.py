"""The change log: what every committed write changed, in commit order (design §6).

This is a public seam. Whatever keeps a view of the store — the in-memory graph index of
each process, notifications, reads from a replica — follows it: it remembers the `position`
its view includes and, before the next read, asks `changes_since` that position. One indexed
statement answers, and it returns nothing when nothing changed. A `RELOAD`, or a
`ChangeLogGap` (the changes after the reader's position were trimmed), means: read
everything again.

Writers `record` what they change anywhere in their transaction; the changes are appended
together, one row per kind with the ids of that kind, by `append_recorded` as the last step
of the transaction (`upstream.store.engine.Store.write` calls it). So the log grows with
transactions, not with rows, and a transaction that changes nothing appends nothing.

**Order.** Positions become visible in the order they were given: a reader that saw P
never later sees a smaller position commit. A sequence would not give that on PostgreSQL:
two transactions draw 5 and 6 and may commit 6 first, so a reader at 6 would skip 5 for
ever. Here positions come from one counter row (`change_log_head`), which the append
updates — taking its row lock — and which the transaction holds until it commits. The next
writer's append waits for that commit, reads the counter after it, and commits after it
too: positions commit in order, and without holes (a transaction that rolls back takes its
positions back with it). The lock is taken only at the end, after the transaction's own
work, so it is held for an append and a commit, never for a transaction's statements:
concurrent writers overlap their work and take turns only to commit. SQLite has one writer
at a time, so its commit order is already this order.

**Trimming.** The log keeps the newest `KEEP` positions: whenever an append passes a
multiple of `TRIM_EVERY`, older ones are deleted (in the same transaction, a range of the
primary key). The newest change is never deleted, and positions have no holes, so a reader
whose next change is gone finds out from the first change it is given: `ChangeLogGap`.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.transaction_state import kept, taken

#: Readers read everything again: a rebuild, a prune, a migration of derived rows.
RELOAD = "reload"
#: Runs whose run row or derived rows (relations, flows, lineage links, dataset versions,
#: the job dependencies they state) were written, derived again or removed.
RUNS = "runs"
#: Jobs and datasets whose declared lineage changed.
DECLARATIONS = "declarations"
#: Datasets, jobs and namespaces whose row, deletion state or alias group changed.
ENTITIES = "entities"
#: Datasets (and jobs) whose tags, or whose fields' tags, changed.
TAGS = "tags"
KINDS = (RUNS, DECLARATIONS, ENTITIES, TAGS, RELOAD)

#: Positions the log keeps (a reader further behind reloads).
KEEP = 100_000
#: An append that passes a multiple of this trims the log.
TRIM_EVERY = 1_000

_PENDING = "upstream_change_log"


class Change(NamedTuple):
    """One kind of change of one committed transaction."""

    position: int
    kind: str
    ids: tuple[uuid.UUID, ...]


class ChangeLogGap(Exception):
    """The changes just after the reader's position were trimmed: it must reload."""

    def __init__(self, after: int, oldest: int) -> None:
        super().__init__(
            f"the change log no longer holds the changes after position {after}; "
            f"its oldest is {oldest}"
        )
        self.after = after
        self.oldest = oldest


#: Made once: every read asks it.
_HEAD = sa.select(t.change_log_head.c.position)
#: The position as a column of another statement (`seen_in_snapshot`).
HEAD = _HEAD.scalar_subquery()
#: The position each open read's snapshot holds, once a statement of it has read it.
_SEEN: weakref.WeakKeyDictionary[Connection, int] = weakref.WeakKeyDictionary()
_SEEN_LOCK = threading.Lock()


def position(conn: Connection) -> int:
    """The newest committed position this transaction sees; 0 for an empty log. Asked of a
    read whose snapshot a statement has already read it from (`seen_in_snapshot`), it
    answers without a statement."""
    with _SEEN_LOCK:
        seen = _SEEN.get(conn)
    if seen is not None:
        return seen
    found = conn.execute(_HEAD).scalar()
    return int(found or 0)


def seen_in_snapshot(conn: Connection, found: int | None) -> None:
    """Note the position (`HEAD`, None for an empty log) that a statement of the read
    `conn` read beside its own columns: the read's first statement (the lineage start's
    lookup) asks it, and `position` is answered from it, a round trip fewer per read.
    Only for a read whose snapshot never moves (`store.engine.is_snapshot`): a write
    transaction's position changes as it appends."""
    with _SEEN_LOCK:
        _SEEN[conn] = int(found or 0)


def changes_since(conn: Connection, after: int) -> list[Change]:
    """Every change after position `after`, in order. Raises ChangeLogGap when the first of
    them was trimmed."""
    log = t.change_log
    rows = conn.execute(
        sa.select(log.c.position, log.c.kind, log.c.ids)
        .where(log.c.position > after)
        .order_by(log.c.position)
    ).all()
    if rows and rows[0].position != after + 1:
        raise ChangeLogGap(after, rows[0].position)
    return [Change(row.position, row.kind, tuple(uuid.UUID(i) for i in row.ids)) for row in rows]


def record(conn: Connection, kind: str, ids: Iterable[uuid.UUID]) -> None:
    """Note that this transaction changed `ids` in the way `kind` says; appended when the
    transaction ends (`append_recorded`). Ids of one kind are gathered into one change."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of change: {kind!r}")
    _pending(conn).setdefault(kind, set()).update(ids)


def append_recorded(conn: Connection, now: datetime | None = None) -> int | None:
    """Append what this transaction recorded, as its last statement before the commit (see
    the module docstring for why last); the newest position it appended, or None when it
    recorded nothing. A transaction that records RELOAD appends only that."""
    changes = taken(conn, _PENDING)
    if changes is None:
        return None
    if RELOAD in changes:
        changes = {RELOAD: set()}
    kinds = [kind for kind in KINDS if kind in changes and (changes[kind] or kind == RELOAD)]
    if not kinds:
        return None
    newest = _append(conn, [(kind, sorted(str(i) for i in changes[kind])) for kind in kinds], now)
    first = newest - len(kinds) + 1
    if newest // TRIM_EVERY != (first - 1) // TRIM_EVERY:
        trim(conn, KEEP)
    return newest


def _append(conn: Connection, changes: list[tuple[str, list[str]]], now: datetime | None) -> int:
    """Give `changes` (kind, ids) the next positions and insert them; the newest position.
    On PostgreSQL in one statement (the counter's update a CTE of the insert): the append
    holds the counter's lock, which serialises writers, for a round trip fewer."""
    head, log = t.change_log_head, t.change_log
    at = now or datetime.now(UTC)
    bump = head.update().values(position=head.c.position + len(changes))
    if conn.dialect.name != "postgresql":
        newest = int(conn.execute(bump.returning(head.c.position)).scalar_one())
        first = newest - len(changes) + 1
        rows = [
            {"position": first + offset, "kind": kind, "ids": ids, "recorded_at": at}
            for offset, (kind, ids) in enumerate(changes)
        ]
        conn.execute(log.insert(), rows)
        return newest
    bumped = bump.returning(head.c.position).cte("bumped")
    each = (
        sa.select(
            (bumped.c.position - (len(changes) - 1 - offset)).label("position"),
            sa.literal(kind, log.c.kind.type).label("kind"),
            sa.literal(ids, log.c.ids.type).label("ids"),
            sa.literal(at, log.c.recorded_at.type).label("recorded_at"),
        )
        for offset, (kind, ids) in enumerate(changes)
    )
    insert = log.insert().from_select(
        ["position", "kind", "ids", "recorded_at"], sa.union_all(*each)
    )
    return int(max(conn.execute(insert.add_cte(bumped).returning(log.c.position)).scalars()))


def trim(conn: Connection, keep: int) -> None:
    """Delete all but the newest `keep` positions (the newest one always stays)."""
    newest = position(conn)
    log = t.change_log
    conn.execute(log.delete().where(log.c.position <= newest - max(keep, 1)))


def _pending(conn: Connection) -> dict[str, set[uuid.UUID]]:
    """The changes this transaction recorded (`transaction_state`: nothing a rolled-back
    transaction recorded is ever appended by the next one on the same connection)."""
    changes: dict[str, set[uuid.UUID]] = kept(conn, _PENDING, dict)
    return changes
