"""What Kafka consumers have stored, per topic and partition (design §6): the offset after
the last message of their batches, raised in the transaction that stores each batch.

Recorded with the events, a recorded offset never runs ahead of what is stored: a consumer
killed before its commit records nothing, and the one that reads the batch again records it.
Offsets are only ever raised (two consumers may store a partition's batch during a
rebalance), so a reader that saw an offset never later sees a smaller one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from upstream.model.read_position import KafkaOffset
from upstream.store import schema as t


def record(conn: Connection, following: Mapping[tuple[str, int], int]) -> None:
    """Raise the stored offset of each (topic, partition) of `following` to at least its
    value (the offset after the last message stored), in key order so that two writers never
    wait on each other's rows in a cycle."""
    if not following:
        return
    table = t.kafka_offsets
    rows = [
        {"topic": topic, "partition": partition, "next_offset": offset}
        for (topic, partition), offset in sorted(following.items())
    ]
    postgres = conn.dialect.name == "postgresql"
    insert = (postgresql.insert if postgres else sqlite.insert)(table)
    larger = sa.func.greatest if postgres else sa.func.max  # SQLite's max of two is scalar
    conn.execute(
        insert.on_conflict_do_update(
            index_elements=["topic", "partition"],
            set_={"next_offset": larger(table.c.next_offset, insert.excluded.next_offset)},
        ),
        rows,
    )


def stored(conn: Connection, offsets: Iterable[KafkaOffset]) -> tuple[KafkaOffset, ...]:
    """The last offset stored in each partition `offsets` name that consumers stored any
    of, sorted."""
    table = t.kafka_offsets
    partitions = sa.tuple_(table.c.topic, table.c.partition).in_(
        sorted({(o.topic, o.partition) for o in offsets})
    )
    rows = conn.execute(
        sa.select(table).where(partitions).order_by(table.c.topic, table.c.partition)
    )
    return tuple(KafkaOffset(row.topic, row.partition, row.next_offset - 1) for row in rows)


def covers(stored: Sequence[KafkaOffset], offsets: Iterable[KafkaOffset]) -> bool:
    """`stored` (as `stored` gives it) holds every message of `offsets`: each offset, and
    those before it in its partition."""
    last = {(o.topic, o.partition): o.offset for o in stored}
    return all(last.get((o.topic, o.partition), -1) >= o.offset for o in offsets)


def known_topics(conn: Connection, topics: Iterable[str]) -> set[str]:
    """Those of `topics` that consumers have stored any message of into this database."""
    table = t.kafka_offsets
    query = sa.select(table.c.topic).where(table.c.topic.in_(sorted(set(topics)))).distinct()
    return set(conn.execute(query).scalars())
