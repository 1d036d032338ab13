"""The one decision on each batch a publishing front published (design §6): committed, so
the consumers store its events, or abandoned, so they store none.

A front cannot take back what it published: when Kafka acknowledged part of a batch, those
messages reach the consumers whatever happens next (Tansu has no read_committed isolation).
So the batch's fate is a row, inserted once by whoever comes first — the front once Kafka
acknowledged every event, or a consumer once the batch's deadline passed without a decision —
and never changed. The front answers 201 only when its commit is the row; every consumer obeys
the row. A batch is therefore stored whole or not at all, whichever process dies when.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from upstream.store import schema as t


def decide(conn: Connection, batch: uuid.UUID, *, committed: bool) -> bool:
    """Record `committed` as the batch's fate unless it has one; the fate it has now."""
    settle(conn, [batch], committed=committed)
    return decided(conn, [batch])[batch]


def settle(conn: Connection, batches: Iterable[uuid.UUID], *, committed: bool) -> None:
    """Give each of `batches` that has no fate yet `committed`; the others keep theirs."""
    rows = [{"id": batch, "committed": committed} for batch in sorted(set(batches))]
    if not rows:
        return
    table = t.published_batches
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    conn.execute(insert(table).on_conflict_do_nothing(index_elements=["id"]), rows)


def decided(conn: Connection, batches: Iterable[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """The fate of each of `batches` decided so far: True committed, False abandoned."""
    table = t.published_batches
    wanted = sorted(set(batches))
    if not wanted:
        return {}
    rows = conn.execute(sa.select(table.c.id, table.c.committed).where(table.c.id.in_(wanted)))
    return {row.id: row.committed for row in rows}
