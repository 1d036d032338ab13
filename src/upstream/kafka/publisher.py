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
message time-out is the same) and the post is answered 503 with Retry-After: re-sending it is safe,
as storing an event twice keeps one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from upstream.kafka.keys import message_key
from upstream.model.errors import BrokerUnavailable
from upstream.model.facts import EventFacts
from upstream.model.json_text import parse
from upstream.model.read_position import KafkaOffset, ReadPosition
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
        client_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        self.topic = topic
        self.timeout = timeout
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
        acknowledged every one; raises BrokerUnavailable when it did not. `since` is unused:
        the wait is the publish time-out from now, as librdkafka counts it."""
        loop = asyncio.get_running_loop()
        acknowledged: list[asyncio.Future[KafkaOffset]] = [loop.create_future() for _ in facts]
        try:
            for event, done in zip(facts, acknowledged, strict=True):
                self._producer.produce(
                    self.topic,
                    value=event.record.payload.encode("utf-8"),
                    key=message_key(parse(event.record.payload)).encode("utf-8"),
                    on_delivery=_settle(loop, done),
                )
        except (BufferError, KafkaException) as exc:
            raise BrokerUnavailable(f"Kafka did not take the events: {exc}") from exc
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*acknowledged, return_exceptions=True), self.timeout + 5
            )
        except TimeoutError:
            raise BrokerUnavailable("Kafka did not acknowledge the events in time") from None
        published: list[KafkaOffset] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            published.append(outcome)
        return WriteResult(
            stored=len(facts), duplicates=0, published=ReadPosition.of_offsets(published).offsets
        )

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
            failure = BrokerUnavailable(f"Kafka did not acknowledge an event: {error.str()}")
            loop.call_soon_threadsafe(_finish, done, failure)

    return delivered


def _finish(done: asyncio.Future[KafkaOffset], outcome: KafkaOffset | BrokerUnavailable) -> None:
    if done.done():  # the post gave up waiting
        return
    if isinstance(outcome, BrokerUnavailable):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)
