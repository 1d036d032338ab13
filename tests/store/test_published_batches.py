"""A publishing front's batch has one fate: whoever decides first (the front committing, a
consumer abandoning) decides for good; the front cannot commit past the batch's deadline; and
a decision goes once no process needs it."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from upstream.model.read_position import KafkaOffset
from upstream.store import kafka_offsets, published_batches
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.published_batches import LATE_COMMIT_MARGIN

NOW = 1_800_000_000.0
LATER = NOW + 3600
AT = (KafkaOffset("lineage", 0, 5), KafkaOffset("lineage", 1, 3))


def _commit(store: Store, batch: uuid.UUID, deadline: float, now: float = NOW) -> bool:
    return store.write(lambda c: published_batches.commit(c, batch, deadline, AT, now=now))


def _rows(store: Store) -> dict[uuid.UUID, tuple[bool, float | None, object]]:
    table = t.published_batches
    with store.read() as conn:
        rows = conn.execute(sa.select(table))
        return {r.id: (r.committed, r.deadline, r.offsets) for r in rows}


def test_the_first_decision_is_the_only_one(store: Store) -> None:
    committed, abandoned, unknown = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    assert _commit(store, committed, LATER)
    store.write(lambda c: published_batches.abandon(c, {abandoned: LATER}))
    # Too late either way: each keeps its first fate.
    assert not _commit(store, abandoned, LATER)
    store.write(lambda c: published_batches.abandon(c, {committed: LATER, abandoned: LATER}))
    with store.read() as conn:
        fates = published_batches.decided(conn, [committed, abandoned, unknown])
    assert fates == {committed: True, abandoned: False}
    # The commit records where Kafka put the batch, for `prune`.
    assert _rows(store)[committed] == (True, LATER, [["lineage", 0, 5], ["lineage", 1, 3]])
    assert _rows(store)[abandoned] == (False, LATER, None)


def test_a_commit_past_its_deadline_abandons_the_batch(store: Store) -> None:
    late, on_time = uuid.uuid4(), uuid.uuid4()
    assert not _commit(store, late, NOW)  # the deadline is the first moment it is late
    assert _commit(store, on_time, NOW + 0.001)
    assert _rows(store)[late] == (False, NOW, None)
    # A consumer that looks now abandons nothing the front committed.
    store.write(lambda c: published_batches.abandon(c, {on_time: NOW + 0.001}))
    assert _rows(store)[on_time][0] is True


def test_prune_removes_the_decisions_no_process_needs(store: Store) -> None:
    """Committed: once its deadline passed and the consumers stored past each of its
    offsets. Abandoned: `LATE_COMMIT_MARGIN` after its deadline. Rows older than the
    deadline's column: kept."""
    passed, behind, unseen, pending = (uuid.uuid4() for _ in range(4))
    old_abandoned, fresh_abandoned, legacy = (uuid.uuid4() for _ in range(3))

    def setup(conn: sa.Connection) -> None:
        for batch, where in [
            (passed, AT),
            (behind, (KafkaOffset("lineage", 0, 5), KafkaOffset("lineage", 1, 4))),
            (unseen, (KafkaOffset("lineage", 2, 0),)),
        ]:
            published_batches.commit(conn, batch, NOW, where, now=NOW - 10)
        published_batches.commit(conn, pending, NOW + 60, AT, now=NOW - 10)
        published_batches.abandon(
            conn, {old_abandoned: NOW - LATE_COMMIT_MARGIN - 1, fresh_abandoned: NOW - 1}
        )
        conn.execute(sa.insert(t.published_batches), [{"id": legacy, "committed": True}])
        # Stored up to offset 5 of partition 0 and 3 of partition 1 (the next: 6 and 4).
        kafka_offsets.record(conn, {("lineage", 0): 6, ("lineage", 1): 4})

    store.write(setup)
    everything = set(_rows(store))
    dry = store.write(lambda c: published_batches.prune(c, NOW + 1, dry_run=True))
    assert dry == 2
    assert set(_rows(store)) == everything
    assert store.write(lambda c: published_batches.prune(c, NOW + 1)) == 2
    assert set(_rows(store)) == everything - {passed, old_abandoned}
    # The consumers move on: the batch behind them goes; the one they never saw stays, and
    # the pending one goes once its deadline passed too.
    store.write(lambda c: kafka_offsets.record(c, {("lineage", 1): 5}))
    assert store.write(lambda c: published_batches.prune(c, NOW + 61)) == 2
    assert set(_rows(store)) == {unseen, fresh_abandoned, legacy}
    assert store.write(lambda c: published_batches.prune(c, NOW + LATE_COMMIT_MARGIN)) == 1
    assert set(_rows(store)) == {unseen, legacy}
