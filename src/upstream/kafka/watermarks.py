"""Whether Kafka offsets a read names were ever given: the brokers know each partition's
newest offset (its high watermark), so an offset at or past it, or a partition the topic does
not have, comes from no acknowledged post (design §6) and is refused as a future store
position is. Brokers that cannot be asked leave the read to wait, as it would anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from upstream.model.errors import InvalidParameter, Problem
from upstream.model.read_position import KafkaOffset

log = logging.getLogger("upstream.kafka")

#: Seconds a read waits for the brokers to say a partition's newest offset.
ASK_SECONDS = 2.0


class OffsetCheck:
    """Asks the brokers through one client of its own, made at the first question (it joins
    no group and reads nothing)."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        self._settings = {
            **(client_options or {}),
            "bootstrap.servers": bootstrap_servers,
            "group.id": "upstream-offset-check",
            "enable.auto.commit": False,
            "logger": logging.getLogger("upstream.kafka.client"),
        }
        self._client: Consumer | None = None

    def __call__(self, offsets: Sequence[KafkaOffset]) -> None:
        """Raise InvalidParameter, naming `after`, for offsets never given."""
        problems = [p for p in map(self._problem, offsets) if p is not None]
        if problems:
            raise InvalidParameter(problems)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _problem(self, offset: KafkaOffset) -> Problem | None:
        if self._client is None:
            self._client = Consumer(self._settings)
        where = TopicPartition(offset.topic, offset.partition)
        try:
            _, newest = self._client.get_watermark_offsets(where, timeout=ASK_SECONDS)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() in _NO_SUCH_PARTITION:
                return Problem(
                    "after",
                    f"Kafka has no partition {offset.partition} of topic {offset.topic}",
                )
            log.debug("cannot ask Kafka for the newest offsets: %s", exc)
            return None
        if offset.offset >= newest:
            return Problem(
                "after",
                f"offset {offset.offset} of {offset.topic} partition {offset.partition} is "
                f"beyond the newest, {newest - 1}",
            )
        return None


_NO_SUCH_PARTITION = {
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
}
