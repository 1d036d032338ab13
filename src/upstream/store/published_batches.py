"""The one decision on each batch a publishing front published (design §6): committed, so
the consumers store its events, or abandoned, so they store none.

A front cannot take back what it published: when Kafka acknowledged part of a batch, those
messages reach the consumers whatever happens next (Tansu has no read_committed isolation).
So the batch's fate is a row, inserted once by whoever comes first — the front once Kafka
acknowledged every event, or a consumer once the batch's deadline passed without a decision —
and never changed. The front answers 201 only when its commit is the row; every consumer obeys
the row. A batch is therefore stored whole or not at all, whichever process dies when.

A row is needed only while some process may still ask for it, so `prune` removes it after:
- a committed batch once its deadline passed and the consumers stored past every offset its
  messages got (`kafka_offsets`): no consumer waits for it, and one that reads its messages
  again (killed between its database commit and its Kafka commit) finds no fate, abandons the
  batch afresh and skips them — they are stored already, and would be stored once anyway;
- an abandoned batch `LATE_COMMIT_MARGIN` after its deadline: a front commits only before the
  deadline (`commit`), so by then none can turn the fate around in a fresh row. The margin
  covers the clocks of the machines disagreeing and a commit's statement taking its time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from upstream.model.read_position import KafkaOffset
from upstream.store import schema as t

#: Seconds after its deadline an abandoned batch's row is kept (see the module).
LATE_COMMIT_MARGIN = 900.0
#: Rows deleted per statement by `prune`.
_PRUNE_CHUNK = 1000


def commit(
    conn: Connection,
    batch: uuid.UUID,
    deadline: float,
    offsets: Iterable[KafkaOffset],
    *,
    now: float,
) -> bool:
    """Commit the batch Kafka put at `offsets` unless it has a fate already, or its
    `deadline` is not after `now` (Unix time, read inside the caller's transaction) — then it
    is abandoned: past the deadline a consumer may have abandoned it, and its row may be gone
    already. Whether it is committed."""
    if now >= deadline:
        abandon(conn, {batch: deadline})
        return False
    offsets_text = [[o.topic, o.partition, o.offset] for o in sorted(offsets)]
    row = {"id": batch, "committed": True, "deadline": deadline, "offsets": offsets_text}
    _insert(conn, [row])
    return decided(conn, [batch])[batch]


def abandon(conn: Connection, deadlines: Mapping[uuid.UUID, float]) -> None:
    """Abandon each batch of `deadlines` (batch: its deadline) that has no fate yet; the
    others keep theirs."""
    rows = [
        {"id": batch, "committed": False, "deadline": deadline, "offsets": None}
        for batch, deadline in sorted(deadlines.items())
    ]
    if rows:
        _insert(conn, rows)


def _insert(conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
    """Insert `rows`, skipping a batch that has its row already."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    statement = insert(t.published_batches).on_conflict_do_nothing(index_elements=["id"])
    conn.execute(statement, rows)


def decided(conn: Connection, batches: Iterable[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """The fate of each of `batches` decided so far: True committed, False abandoned."""
    table = t.published_batches
    wanted = sorted(set(batches))
    if not wanted:
        return {}
    rows = conn.execute(sa.select(table.c.id, table.c.committed).where(table.c.id.in_(wanted)))
    return {row.id: row.committed for row in rows}


def prune(conn: Connection, now: float, *, dry_run: bool = False) -> int:
    """Remove the rows no process needs any more at `now` (Unix time; see the module); how
    many (a dry run only counts them). Rows without a deadline are kept."""
    table = t.published_batches
    stored = {
        (row.topic, row.partition): row.next_offset
        for row in conn.execute(sa.select(t.kafka_offsets))
    }
    committed = conn.execute(
        sa.select(table.c.id, table.c.offsets).where(table.c.committed, table.c.deadline < now)
    )
    doomed = [
        row.id
        for row in committed
        if row.offsets is not None
        and all(
            stored.get((topic, partition), 0) > offset for topic, partition, offset in row.offsets
        )
    ]
    abandoned = sa.select(table.c.id).where(
        ~table.c.committed, table.c.deadline < now - LATE_COMMIT_MARGIN
    )
    doomed += conn.execute(abandoned).scalars()
    if not dry_run:
        for start in range(0, len(doomed), _PRUNE_CHUNK):
            conn.execute(
                sa.delete(table).where(table.c.id.in_(doomed[start : start + _PRUNE_CHUNK]))
            )
    return len(doomed)
