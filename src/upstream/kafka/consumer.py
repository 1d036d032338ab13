"""One Kafka consumer: read a batch, store it, and only then commit its offsets.

At-least-once by construction: offsets are committed after the transaction holding the
batch's events committed, so a consumer killed at any moment leaves its batch to be read
again, and events are keyed by their content, so reading one again stores nothing twice.

A message of a publishing front's batch (`kafka.batches`) is stored once its batch is
committed and skipped once it is abandoned; until one or the other, or the batch's deadline,
the consumer waits, polling, with its partitions paused.

A bad message is refused alone (logged with topic, partition and offset, counted, copied to
the dead-letter topic when there is one) and its offset is committed with the batch: it never
blocks its partition. When the database (or the dead-letter topic) is unavailable the consumer
pauses its partitions and tries the same batch again with a growing delay, polling meanwhile
so it stays in its group; nothing is skipped and no restart is needed. Loss of the broker is
librdkafka's to ride out: it reconnects, and consumption resumes where it was.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from upstream.ingest.body import Limits
from upstream.kafka.batches import BatchTag, judge
from upstream.kafka.messages import MessageOutcome, Refusal, ingest_messages
from upstream.kafka.metrics import ConsumerMetrics
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.store.outage import is_database_outage

log = logging.getLogger("upstream.kafka")
T = TypeVar("T")

#: Longest wait between two attempts at a batch while the database is away, in seconds.
MAX_RETRY_DELAY = 30.0
#: Longest wait between two looks at an undecided batch's fate, in seconds; the first is
#: 10 ms, as a front usually decides within milliseconds of its messages' arrival.
MAX_DECISION_WAIT = 0.5
#: How long a dead-letter copy may take to be acknowledged before it counts as unavailable.
DEAD_LETTER_TIMEOUT = 30.0


@dataclass(frozen=True)
class ConsumerConfig:
    """Where to read from and how; see the `kafka_*` settings for each field's meaning."""

    bootstrap_servers: str
    topic: str
    group: str
    limits: Limits
    dead_letter_topic: str | None = None
    batch_messages: int = 500
    client_options: Mapping[str, str | int | float | bool] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> ConsumerConfig:
        return cls(
            bootstrap_servers=settings.kafka_bootstrap_servers,
            topic=settings.kafka_topic,
            group=settings.kafka_group,
            limits=Limits(
                settings.max_body_bytes, settings.max_batch_events, settings.max_event_values
            ),
            dead_letter_topic=settings.kafka_dead_letter_topic or None,
            batch_messages=settings.kafka_batch_messages,
            client_options=dict(settings.kafka_options),
        )

    def client_settings(self) -> dict[str, str | int | float | bool]:
        """librdkafka settings shared by the consumer and the dead-letter producer; the
        user's options (security, SASL…) come first, so ours cannot be undone by mistake."""
        return {**self.client_options, "bootstrap.servers": self.bootstrap_servers}


@dataclass
class Totals:
    """Running totals of one consumer, for the progress line."""

    consumed: int = 0
    stored: int = 0
    duplicates: int = 0
    refused: int = 0
    #: Events of front batches that were abandoned, so never stored.
    abandoned: int = 0
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    last_commit_seconds: float | None = None
    waiting: bool = False


class Unavailable(Exception):
    """Something the batch needs (the dead-letter topic) cannot be reached now."""


class LineageConsumer:
    """Consumes `config.topic` into `store` until `stop` is set (see the module)."""

    def __init__(
        self,
        store: Store,
        config: ConsumerConfig,
        metrics: ConsumerMetrics,
        stop: threading.Event,
    ) -> None:
        self.store = store
        self.config = config
        self.metrics = metrics
        self.stop = stop
        self.totals = Totals()
        self._owned: set[tuple[str, int]] = set()
        #: The client error seen last (the broker unreachable…), None once data flows again.
        self.last_client_error: str | None = None
        self._consumer = Consumer(
            {
                **config.client_settings(),
                "group.id": config.group,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "logger": logging.getLogger("upstream.kafka.client"),
                "error_cb": self._client_error,
            }
        )
        self._producer: Producer | None = None
        if config.dead_letter_topic:
            self._producer = Producer(
                {**config.client_settings(), "logger": logging.getLogger("upstream.kafka.client")}
            )

    @property
    def partitions(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition) pairs this consumer owns now."""
        return frozenset(self._owned)

    def run(self) -> None:
        """Consume until stopped; the batch in hand is finished (or left uncommitted) first."""
        self._consumer.subscribe(
            [self.config.topic],
            on_assign=self._assigned,
            on_revoke=self._revoked,
            on_lost=self._revoked,
        )
        log.info(
            "consuming %s from %s as group %s",
            self.config.topic,
            self.config.bootstrap_servers,
            self.config.group,
        )
        try:
            while not self.stop.is_set():
                batch = self._readable(self._next_batch())
                if batch:
                    self.handle(batch)
        finally:
            self._consumer.close()  # leaves the group at once, so its partitions move now
            if self._producer is not None:
                self._producer.flush(DEAD_LETTER_TIMEOUT)

    def _next_batch(self) -> list[Message]:
        """The next message (waiting up to half a second for it), with every message already
        fetched behind it, up to `batch_messages`. Waiting for a full batch instead would hold
        a lone message — a post to a publishing front whose client waits to read it — for the
        whole time-out; under load the fetched messages fill the batch anyway."""
        first = self._consumer.consume(1, timeout=0.5)
        if not first or self.config.batch_messages == 1:
            return first
        return first + self._consumer.consume(self.config.batch_messages - 1, timeout=0)

    def handle(self, batch: Sequence[Message]) -> None:
        """Store one batch, dead-letter its refusals, then commit its offsets."""
        started = time.perf_counter()
        self.metrics.messages.labels(self.config.topic).inc(len(batch))
        self.totals.consumed += len(batch)
        abandoned = self._until_decided([BatchTag.of(message.headers()) for message in batch])
        if abandoned is None:
            return  # stopped while waiting: uncommitted, so read again by whoever goes on
        kept = [message for index, message in enumerate(batch) if index not in abandoned]
        values = [message.value() for message in kept]
        following = _following(batch)
        outcomes = self._until_available(
            lambda: ingest_messages(self.store, values, self.config.limits, following)
        )
        if outcomes is None:
            return
        refusals = [(m, o.refusal) for m, o in zip(kept, outcomes, strict=True) if o.refusal]
        for message, refusal in refusals:
            self._report_refusal(message, refusal)
        if refusals and self._producer is not None:
            producer = self._producer
            if self._until_available(lambda: _dead_letter(producer, self.config, refusals)) is None:
                return
        self._commit(batch)
        seconds = time.perf_counter() - started
        self.metrics.commit_seconds.observe(seconds)
        self.totals.last_commit_seconds = seconds
        self._count(outcomes, abandoned=len(abandoned))
        self._measure_lag()

    def _until_decided(self, tags: Sequence[BatchTag | None]) -> frozenset[int] | None:
        """The positions of the messages (of `tags`) whose batch was abandoned, once every
        batch among them is decided; None when stopped meanwhile. Waiting, the partitions
        are paused and looked at again after 10 ms, then less and less often."""
        delay = 0.01
        paused = False
        try:
            while True:
                verdict = self._until_available(lambda: judge(self.store, tags, time.time()))
                if verdict is None:
                    return None
                if not verdict.undecided:
                    return verdict.abandoned
                if not paused:
                    paused = True
                    self._consumer.pause(self._consumer.assignment())
                if self._idle(delay):
                    return None
                delay = min(delay * 2, MAX_DECISION_WAIT)
        finally:
            if paused:
                self._consumer.resume(self._consumer.assignment())

    def _readable(self, messages: list[Message]) -> list[Message]:
        """The messages with data; the errors among them (no such topic…) are reported."""
        good: list[Message] = []
        for message in messages:
            error = message.error()
            if error is None:
                good.append(message)
                self.last_client_error = None
                continue
            if error.fatal():
                raise KafkaException(error)
            if error.code() == KafkaError._PARTITION_EOF:
                continue
            self._client_error(error)
        return good

    def _client_error(self, error: KafkaError) -> None:
        """A client-wide or partition error: logged once until it changes; librdkafka keeps
        reconnecting by itself."""
        if error.str() != self.last_client_error:
            self.last_client_error = error.str()
            log.warning("kafka: %s (retrying)", error.str())

    def _until_available(self, attempt: Callable[[], T]) -> T | None:
        """`attempt()`, again and again while the database or the dead-letter topic is
        unavailable, with the partitions paused; None when stopped meanwhile."""
        delay = 0.5
        paused = False
        try:
            while True:
                try:
                    return attempt()
                except Exception as exc:
                    if not (is_database_outage(exc) or isinstance(exc, Unavailable)):
                        raise
                    if not paused:
                        paused = True
                        self._pause(exc)
                if self._idle(delay):
                    return None
                delay = min(delay * 2, MAX_RETRY_DELAY)
        finally:
            if paused:
                self._resume()

    def _pause(self, exc: Exception) -> None:
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        log.warning("paused: %s; trying the same batch again until it is stored", reason)
        self._consumer.pause(self._consumer.assignment())
        self.metrics.waiting.inc()
        self.totals.waiting = True

    def _resume(self) -> None:
        self._consumer.resume(self._consumer.assignment())
        self.metrics.waiting.dec()
        self.totals.waiting = False
        log.info("resumed: the batch is through")

    def _idle(self, seconds: float) -> bool:
        """Wait `seconds`, polling so the group keeps this member; True when stopped. A
        partition assigned meanwhile starts unpaused: what it delivers is given back."""
        deadline = time.monotonic() + seconds
        while not self.stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            early = self._readable(
                self._consumer.consume(self.config.batch_messages, timeout=min(remaining, 0.5))
            )
            if early:
                self._give_back(early)
        return True

    def _give_back(self, messages: Sequence[Message]) -> None:
        first: dict[tuple[str, int], int] = {}
        for message in messages:
            topic, partition, offset = _where(message)
            first[(topic, partition)] = min(first.get((topic, partition), offset), offset)
        for (topic, partition), offset in first.items():
            self._consumer.seek(TopicPartition(topic, partition, offset))
        self._consumer.pause(self._consumer.assignment())

    def _commit(self, batch: Sequence[Message]) -> None:
        """Commit the offset after the last message of each partition this member still
        owns. A refused commit (a rebalance came first) is harmless: the batch is stored,
        and whoever reads it again stores nothing twice."""
        offsets = [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in _following(batch).items()
            if (topic, partition) in self._owned
        ]
        if not offsets:
            return
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self.metrics.commit_failures.inc()
            reason = kafka_reason(exc)
            log.warning("offset commit refused (%s); the batch will be read again", reason)

    def _report_refusal(self, message: Message, refusal: Refusal) -> None:
        topic, partition, offset = _where(message)
        log.warning(
            "refused the message at %s partition %s offset %s: %s",
            topic,
            partition,
            offset,
            refusal.message,
            extra={"topic": topic, "partition": partition, "offset": offset},
        )
        self.metrics.refused.labels(self.config.topic, refusal.reason).inc()
        self.totals.refused += 1

    def _count(self, outcomes: Sequence[MessageOutcome], *, abandoned: int) -> None:
        stored = sum(o.stored for o in outcomes)
        duplicates = sum(o.duplicates for o in outcomes)
        self.metrics.events.labels(self.config.topic, "stored").inc(stored)
        self.metrics.events.labels(self.config.topic, "duplicate").inc(duplicates)
        self.metrics.events.labels(self.config.topic, "abandoned").inc(abandoned)
        self.totals.stored += stored
        self.totals.duplicates += duplicates
        self.totals.abandoned += abandoned

    def _measure_lag(self) -> None:
        """High watermark minus position per owned partition, from the last fetch (no
        request to the broker)."""
        owned = [TopicPartition(topic, partition) for topic, partition in sorted(self._owned)]
        for position in self._consumer.position(owned):
            if position.offset < 0:
                continue  # nothing read from it yet
            _, high = self._consumer.get_watermark_offsets(position, cached=True)
            lag = max(high - position.offset, 0)
            self.metrics.lag.labels(position.topic, str(position.partition)).set(lag)
            self.totals.lag[(position.topic, position.partition)] = lag

    def _assigned(self, _: Consumer, partitions: list[TopicPartition]) -> None:
        self._owned |= {(p.topic, p.partition) for p in partitions}
        log.info("assigned %s", _partition_list(partitions))

    def _revoked(self, _: Consumer, partitions: list[TopicPartition]) -> None:
        for p in partitions:
            self._owned.discard((p.topic, p.partition))
            self.totals.lag.pop((p.topic, p.partition), None)
            self.metrics.lag.labels(p.topic, str(p.partition)).set(0)
        log.info("released %s", _partition_list(partitions))


def _dead_letter(
    producer: Producer, config: ConsumerConfig, refusals: Sequence[tuple[Message, Refusal]]
) -> int:
    """Copy each refused message, key and value untouched, to the dead-letter topic with
    where it came from and why it was refused in headers; the number of copies. Raises
    Unavailable unless every copy is acknowledged."""
    failures: list[str] = []

    def delivered(error: KafkaError | None, _: Message) -> None:
        if error is not None:
            failures.append(error.str())

    for message, refusal in refusals:
        topic, partition, offset = _where(message)
        producer.produce(
            config.dead_letter_topic or "",
            key=message.key(),
            value=message.value(),
            headers=[
                ("upstream.error", refusal.message.encode("utf-8")),
                ("upstream.reason", refusal.reason.encode("utf-8")),
                ("upstream.topic", topic.encode("utf-8")),
                ("upstream.partition", str(partition).encode("ascii")),
                ("upstream.offset", str(offset).encode("ascii")),
            ],
            on_delivery=delivered,
        )
    if producer.flush(DEAD_LETTER_TIMEOUT) or failures:
        reason = failures[0] if failures else "not acknowledged in time"
        raise Unavailable(f"the dead-letter topic {config.dead_letter_topic}: {reason}")
    return len(refusals)


def kafka_reason(exc: KafkaException) -> str:
    """The readable part of a Kafka client exception (`No such configuration property: …`)."""
    error = exc.args[0] if exc.args else None
    return error.str() if isinstance(error, KafkaError) else str(exc)


def _following(batch: Sequence[Message]) -> dict[tuple[str, int], int]:
    """The offset after the batch's last message in each of its partitions: what is
    committed to Kafka, and recorded in the store with the batch."""
    following: dict[tuple[str, int], int] = {}
    for message in batch:
        topic, partition, offset = _where(message)
        following[(topic, partition)] = max(following.get((topic, partition), 0), offset + 1)
    return following


def _where(message: Message) -> tuple[str, int, int]:
    """Topic, partition and offset of a message with data (which always has all three)."""
    return message.topic() or "", message.partition() or 0, message.offset() or 0


def _partition_list(partitions: Sequence[TopicPartition]) -> str:
    return ", ".join(f"{p.topic}[{p.partition}]" for p in partitions) or "no partitions"
