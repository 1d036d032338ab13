"""The write path of a publishing front (`upstream serve --publish-to-kafka`): validated
events go to the Kafka topic the consumers (`upstream consume`) store from, and a post is
answered once the broker has them.

The front validates a post exactly as a storing server does (`ingest.service.prepare`, same
errors), so a refused batch publishes nothing. Each event is one message, its value the
event as posted and its key OpenLineage's (`kafka.keys`); the producer waits for every
in-sync replica (acks=all) and is idempotent, so a broker's retry never doubles a message.
A post is answered after the broker acknowledged all of its events, with the partition and
offset it gave each (the newest per partition is the post's position, design §6); when the
broker does not within `kafka_publish_timeout` seconds, librdkafka gives the messages up (its
message time-out is the same) and the post is answered 503 with Retry-After.

Kafka may take part of a post and fail the rest, and what it took reaches the consumers. So
the messages of a post of several events carry their batch's tag (`kafka.batches`), and the
post is answered 201 only once the front committed the batch in the database, after Kafka
acknowledged every event and before the batch's deadline (with the offsets Kafka gave, which
tell when the decision may be pruned); on any failure, or past the deadline, the front
abandons it, and a consumer abandons one its front never decided. A post answered 503
therefore has none of its events stored, and re-sending it is safe. One event posted alone
needs no decision: it is published or not.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from sqlalchemy.engine import Connection

from upstream.kafka.batches import DECISION_GRACE, BatchTag
from upstream.kafka.keys import message_key
from upstream.model.errors import BrokerUnavailable, StoreUnavailable
from upstream.model.facts import EventFacts
from upstream.model.json_text import parse
from upstream.model.read_position import KafkaOffset, ReadPosition
from upstream.store import published_batches
from upstream.store.engine import Store
from upstream.store.writer import WriteResult

log = logging.getLogger("upstream.kafka")

#: Seconds the thread serving the producer's callbacks waits for one.
_POLL_SECONDS = 0.1


class KafkaPublisher:
    """Publishes posts' events to one topic; shared by the requests of one process."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        timeout: float,
        store: Store,
        client_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        self.topic = topic
        self.timeout = timeout
        #: Where the fate of each batch is decided (the primary).
        self._store = store
        self._producer = Producer(
            {
                **(client_options or {}),
                "bootstrap.servers": bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "message.timeout.ms": max(1, round(timeout * 1000)),
                "linger.ms": 2,
                "logger": logging.getLogger("upstream.kafka.client"),
            }
        )
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._serve_callbacks, name="upstream-kafka-publisher", daemon=True
        )
        self._thread.start()

    async def write(
        self, facts: Sequence[EventFacts], *, since: float | None = None
    ) -> WriteResult:
        """Publish `facts` (one post's validated events, in order) and return once the broker
        acknowledged every one and, for several, their batch is committed; raises
        BrokerUnavailable (or StoreUnavailable, the batch undecided) when not, and then none
        of the events is stored. `since` is unused: the wait is the publish time-out from
        now, as librdkafka counts it."""
        loop = asyncio.get_running_loop()
        tag = None
        if len(facts) > 1:
            tag = BatchTag(uuid.uuid4(), time.time() + self.timeout + DECISION_GRACE)
        acknowledged: list[asyncio.Future[KafkaOffset]] = [loop.create_future() for _ in facts]
        try:
            for event, done in zip(facts, acknowledged, strict=True):
                self._producer.produce(
                    self.topic,
                    value=event.record.payload.encode("utf-8"),
                    key=message_key(parse(event.record.payload)).encode("utf-8"),
                    headers=tag.headers() if tag else None,
                    on_delivery=_settle(loop, done),
                )
        except (BufferError, KafkaException) as exc:
            raise await self._give_up(tag, f"Kafka did not take the events: {exc}") from exc
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*acknowledged, return_exceptions=True), self.timeout + 5
            )
        except TimeoutError:
            raise await self._give_up(tag, "Kafka did not acknowledge the events in time") from None
        published = [o for o in outcomes if isinstance(o, KafkaOffset)]
        if len(published) < len(facts):
            failure = next(o for o in outcomes if not isinstance(o, KafkaOffset))
            reason = f"Kafka acknowledged {len(published)} of the {len(facts)} events ({failure})"
            raise await self._give_up(tag, reason)
        offsets = ReadPosition.of_offsets(published).offsets
        if tag is not None and not await self._commit(tag, offsets):
            raise BrokerUnavailable(
                "Kafka acknowledged the events after their batch's deadline; none of them "
                "will be stored, re-sending the post is safe"
            )
        return WriteResult(stored=len(facts), duplicates=0, published=offsets)

    async def _commit(self, tag: BatchTag, offsets: Sequence[KafkaOffset]) -> bool:
        """Commit the batch Kafka put at `offsets` unless a consumer abandoned it first or
        its deadline passed (then it is abandoned); whether it is committed. The clock is
        read in the transaction, so a commit held up (the pool, a lock) is judged when it is
        made."""

        def commit(conn: Connection) -> bool:
            return published_batches.commit(conn, tag.batch, tag.deadline, offsets, now=time.time())

        return await asyncio.to_thread(self._store.write, commit)

    async def _give_up(self, tag: BatchTag | None, reason: str) -> BrokerUnavailable:
        """The 503 of a post Kafka did not wholly take, its batch abandoned first, so that
        consumers skip what Kafka took of it at once; when the database cannot be reached
        they abandon it themselves at its deadline. One event alone may have reached Kafka
        with its acknowledgement lost: it may still be stored."""
        if tag is None:
            return BrokerUnavailable(f"{reason}; re-sending the post is safe")
        abandon = partial(published_batches.abandon, deadlines={tag.batch: tag.deadline})
        try:
            await asyncio.to_thread(self._store.write, abandon)
        except StoreUnavailable as exc:
            log.warning("batch %s left to its deadline: %s", tag.batch, exc.reason)
        return BrokerUnavailable(f"{reason}; none of them will be stored, re-send the post")

    async def close(self) -> None:
        """Deliver what is still queued (within the publish time-out), then stop."""
        left = await asyncio.to_thread(self._producer.flush, self.timeout)
        if left:
            log.warning("%d events were not acknowledged by Kafka before shutdown", left)
        self._stopped.set()
        await asyncio.to_thread(self._thread.join, 5)

    def _serve_callbacks(self) -> None:
        while not self._stopped.is_set():
            self._producer.poll(_POLL_SECONDS)


def _settle(loop: asyncio.AbstractEventLoop, done: asyncio.Future[KafkaOffset]) -> Any:
    """The delivery callback of one message: settles `done` on the event loop with where
    the broker put it."""

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is None:
            where = KafkaOffset(
                message.topic() or "", message.partition() or 0, message.offset() or 0
            )
            loop.call_soon_threadsafe(_finish, done, where)
        else:
            failure = BrokerUnavailable(error.str())
            loop.call_soon_threadsafe(_finish, done, failure)

    return delivered


def _finish(done: asyncio.Future[KafkaOffset], outcome: KafkaOffset | BrokerUnavailable) -> None:
    if done.done():  # the post gave up waiting
        return
    if isinstance(outcome, BrokerUnavailable):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)
