"""A publishing front's batch is stored whole or not at all: Kafka may take part of a post and
fail the rest (and Tansu delivers even an aborted Kafka transaction's messages), so the
batch's fate is decided once in the database and the consumers obey it."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
from confluent_kafka import KafkaError, Producer
from fastapi.testclient import TestClient

from tests.builders import run_event
from tests.kafka.test_kafka_consume import consuming, eventually
from tests.kafka_support import TansuBroker
from upstream.api.app import create_app
from upstream.kafka.batches import BATCH_HEADER, BatchTag
from upstream.model.read_position import ReadPosition
from upstream.retention import prune_batches
from upstream.settings import Settings
from upstream.store import published_batches
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.published_batches import LATE_COMMIT_MARGIN


class AcknowledgesOnly:
    """The front's producer, but every message after the first `k` fails as one Kafka did
    not acknowledge in time: the first `k` are really published."""

    def __init__(self, producer: Producer, k: int) -> None:
        self._producer = producer
        self._left = k

    def produce(self, *args: Any, on_delivery: Any, **kwargs: Any) -> None:
        if self._left > 0:
            self._left -= 1
            self._producer.produce(*args, on_delivery=on_delivery, **kwargs)
        else:
            on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._producer, name)


def _stored_runs(store: Store) -> Counter[str]:
    with store.read() as conn:
        return Counter(str(r) for r in conn.execute(sa.select(t.events.c.run_id)).scalars())


def _fates(store: Store) -> dict[uuid.UUID, bool]:
    with store.read() as conn:
        return {r.id: r.committed for r in conn.execute(sa.select(t.published_batches))}


def _run_ids(events: list[dict[str, Any]]) -> set[str]:
    return {e["run"]["runId"] for e in events}


def test_a_batch_kafka_takes_only_part_of_is_503_and_none_of_it_is_ever_stored(
    front: TestClient, kafka_broker: TansuBroker, front_topic: str, db_url: str, store: Store
) -> None:
    failed = [run_event(("etl", f"failed{n}")) for n in range(5)]
    good = [run_event(("etl", f"good{n}")) for n in range(4)]
    alone = run_event(("etl", "alone"))
    publisher = front.app.state.event_writer  # type: ignore[attr-defined]
    real = publisher._producer
    publisher._producer = AcknowledgesOnly(real, k=2)
    refused = front.post("/api/v1/lineage", json=failed)
    publisher._producer = real
    assert refused.status_code == 503
    assert refused.headers["Retry-After"]
    assert front.post("/api/v1/lineage", json=good).status_code == 201
    assert front.post("/api/v1/lineage", json=alone).status_code == 201
    with consuming(db_url, kafka_broker.bootstrap, front_topic) as consumer:
        eventually(lambda: consumer.totals.consumed == 7, "every message consumed")
    # Stopping finished the batch in hand.
    stored = _stored_runs(store)
    assert not _run_ids(failed) & set(stored)
    kept = _run_ids([*good, alone])
    assert {run: stored[run] for run in kept} == dict.fromkeys(kept, 1)
    assert (consumer.totals.stored, consumer.totals.abandoned) == (5, 2)
    # Kafka has the failed batch's first two events, then the good batch, then the one alone.
    published = kafka_broker.read_all(front_topic, 7, timeout=20)
    assert len(published) == 7
    tags = {BatchTag.of(m.headers()) for m in published}  # type: ignore[attr-defined]
    batches = {tag.batch for tag in tags if tag is not None}
    assert len(batches) == 2  # the failed and the good batch; the lone event has no tag
    assert None in tags
    assert sorted(_fates(store).values()) == [False, True]
    # The 503 says what a producer can rely on.
    assert refused.json()["message"].startswith("Kafka acknowledged 2 of the 5 events (")
    assert "none of them will be stored" in refused.json()["message"]


def _publish_tagged(
    broker: TansuBroker, topic: str, events: list[dict[str, Any]], tag: BatchTag
) -> None:
    """What a front publishes before it decides: its batch's messages, tagged."""
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for event in events:
        producer.produce(topic, value=json.dumps(event).encode(), headers=tag.headers())
    assert producer.flush(30) == 0


def test_a_consumer_holds_an_undecided_batch_then_stores_or_abandons_it(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    topic = kafka_broker.create_topic(partitions=1)
    committed = [run_event(("etl", f"committed{n}")) for n in range(3)]
    orphaned = [run_event(("etl", f"orphaned{n}")) for n in range(3)]
    later = run_event(("etl", "later"))
    to_commit = BatchTag(uuid.uuid4(), time.time() + 600)
    _publish_tagged(kafka_broker, topic, committed, to_commit)
    with consuming(db_url, kafka_broker.bootstrap, topic) as consumer:
        time.sleep(1.5)
        assert _stored_runs(store) == Counter()  # held: its front has not decided
        assert store.write(
            lambda conn: published_batches.commit(
                conn, to_commit.batch, to_commit.deadline, (), now=time.time()
            )
        )
        eventually(lambda: _run_ids(committed) <= set(_stored_runs(store)), "stored once decided")
        # A front killed after publishing: nobody commits it; abandoned at its deadline.
        to_orphan = BatchTag(uuid.uuid4(), time.time() + 2)
        _publish_tagged(kafka_broker, topic, orphaned, to_orphan)
        kafka_broker.produce(topic, [json.dumps(later).encode()])
        time.sleep(1)
        assert later["run"]["runId"] not in _stored_runs(store)  # behind the undecided batch
        eventually(lambda: later["run"]["runId"] in _stored_runs(store), "the partition moves on")
    assert consumer.totals.abandoned == 3
    assert _fates(store) == {to_commit.batch: True, to_orphan.batch: False}
    stored = _stored_runs(store)
    assert not _run_ids(orphaned) & set(stored)
    assert {run: stored[run] for run in _run_ids(committed)} == dict.fromkeys(
        _run_ids(committed), 1
    )
    # The front, back late, cannot commit what a consumer abandoned (even by a clock that
    # says it is in time).
    assert not store.write(
        lambda conn: published_batches.commit(
            conn, to_orphan.batch, to_orphan.deadline + 600, (), now=time.time()
        )
    )


@pytest.mark.parametrize(
    "headers",
    [
        None,
        [(BATCH_HEADER, b"not-a-uuid"), ("upstream.batch.deadline", b"1")],
        [(BATCH_HEADER, str(uuid.uuid4()).encode())],
    ],
)
def test_a_message_without_a_whole_tag_is_no_batch(headers: Any) -> None:
    assert BatchTag.of(headers) is None


def _rows(store: Store) -> dict[uuid.UUID, tuple[bool, float, Any]]:
    with store.read() as conn:
        rows = conn.execute(sa.select(t.published_batches))
        return {r.id: (r.committed, r.deadline, r.offsets) for r in rows}


def test_a_decision_goes_once_the_consumers_passed_its_offsets_and_nothing_is_stored_twice(
    front: TestClient,
    kafka_broker: TansuBroker,
    front_topic: str,
    db_url: str,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A committed batch's row goes once its deadline passed and the consumers stored past
    the offsets the front recorded in it. Its messages read again (by a consumer killed
    between its database commit and its Kafka commit; here a second group) find no fate:
    the consumer abandons the batch afresh and skips them — they are stored already. The
    client posting the same events again makes a new batch, whose events are duplicates."""
    publisher = front.app.state.event_writer  # type: ignore[attr-defined]
    # A deadline 3 s after the post, so that the test need not wait the usual ~40 s.
    monkeypatch.setattr("upstream.kafka.publisher.DECISION_GRACE", 3 - publisher.timeout)
    events = [run_event(("etl", f"pruned{n}")) for n in range(4)]
    posted = front.post("/api/v1/lineage", json=events)
    assert posted.status_code == 201, posted.text
    ((batch, (committed, deadline, offsets)),) = _rows(store).items()
    assert committed
    where = ReadPosition.parse(posted.headers["X-Upstream-Position"]).offsets
    assert offsets == [[o.topic, o.partition, o.offset] for o in where]
    time.sleep(max(0.0, deadline - time.time() + 0.1))
    assert prune_batches(store) == 0  # no consumer stored it yet
    with consuming(db_url, kafka_broker.bootstrap, front_topic, group="first") as consumer:
        eventually(lambda: consumer.totals.consumed == 4, "every message consumed")
    assert prune_batches(store) == 1
    assert _rows(store) == {}
    with consuming(db_url, kafka_broker.bootstrap, front_topic, group="again") as again:
        eventually(lambda: again.totals.consumed == 4, "every message read again")
    assert (again.totals.stored, again.totals.abandoned) == (0, 4)
    # (The deadline as the messages' headers carry it: to the millisecond.)
    assert _rows(store) == {batch: (False, pytest.approx(deadline, abs=0.001), None)}
    assert front.post("/api/v1/lineage", json=events).status_code == 201
    with consuming(db_url, kafka_broker.bootstrap, front_topic, group="first") as consumer:
        eventually(lambda: consumer.totals.consumed == 4, "the post sent again consumed")
    assert (consumer.totals.stored, consumer.totals.duplicates) == (0, 4)
    assert _stored_runs(store) == dict.fromkeys(_run_ids(events), 1)


def test_a_front_past_its_batch_deadline_answers_503_and_the_abandoned_row_goes_later(
    front: TestClient,
    kafka_broker: TansuBroker,
    front_topic: str,
    db_url: str,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kafka acknowledged the batch only after its deadline (here: the deadline is already
    past when it is published): the front does not commit it — a consumer may have abandoned
    it and its row be pruned — but abandons it and answers as for Kafka failing."""
    publisher = front.app.state.event_writer  # type: ignore[attr-defined]
    monkeypatch.setattr("upstream.kafka.publisher.DECISION_GRACE", -publisher.timeout - 1)
    late = [run_event(("etl", f"late{n}")) for n in range(3)]
    refused = front.post("/api/v1/lineage", json=late)
    assert refused.status_code == 503
    assert refused.headers["Retry-After"]
    assert "after their batch's deadline" in refused.json()["message"]
    ((committed, deadline, offsets),) = _rows(store).values()
    assert (committed, offsets) == (False, None)
    with consuming(db_url, kafka_broker.bootstrap, front_topic) as consumer:
        eventually(lambda: consumer.totals.consumed == 3, "every message consumed")
    assert (consumer.totals.stored, consumer.totals.abandoned) == (0, 3)
    assert not _run_ids(late) & set(_stored_runs(store))
    assert prune_batches(store) == 0  # a front whose clock is behind might still commit it
    removed = store.write(
        lambda conn: published_batches.prune(conn, deadline + LATE_COMMIT_MARGIN + 1)
    )
    assert removed == 1
    assert _rows(store) == {}


def test_a_front_prunes_the_decisions_while_it_runs(
    db_url: str, kafka_broker: TansuBroker, front_topic: str, store: Store
) -> None:
    old = uuid.uuid4()
    long_ago = time.time() - LATE_COMMIT_MARGIN - 1
    store.write(lambda conn: published_batches.abandon(conn, {old: long_ago}))
    settings = Settings(
        db_url=db_url,
        publish_to_kafka=True,
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=front_topic,
    )
    with TestClient(create_app(settings, migrate=False)):
        eventually(lambda: _rows(store) == {}, "the abandoned batch's row pruned")
