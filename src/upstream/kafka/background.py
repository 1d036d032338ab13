"""Kafka consumers beside the API (`kafka_consumers` of them in each `upstream serve`
process), on threads of their own, each with its own Kafka client.

A consumer that fails for a reason it cannot wait out (a fatal Kafka error, a bug) is logged
with its traceback and started again after a pause, so the API process keeps ingesting; its
uncommitted batch is read again, which stores nothing twice. On shutdown each one finishes or
abandons its batch, and leaves the group so its partitions move to the others at once.
"""

from __future__ import annotations

import logging
import threading

from upstream.kafka.consumer import ConsumerConfig, LineageConsumer
from upstream.kafka.metrics import ConsumerMetrics
from upstream.store.engine import Store

log = logging.getLogger("upstream.kafka")

#: Pause before a failed consumer starts again, in seconds.
RESTART_DELAY = 5.0


class BackgroundConsumers:
    """`count` consumers of one group, run until `stop()`."""

    def __init__(
        self, store: Store, config: ConsumerConfig, metrics: ConsumerMetrics, count: int
    ) -> None:
        self._store = store
        self._config = config
        self._metrics = metrics
        self._stopping = threading.Event()
        self._count = count
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the consumers; a Kafka setting the client refuses raises here, at start-up,
        rather than failing on a thread again and again."""
        for number in range(1, self._count + 1):
            thread = threading.Thread(
                target=self._keep_running,
                args=(self._new_consumer(),),
                name=f"kafka-consumer-{number}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Ask every consumer to stop and wait for them (a batch in hand is finished)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)

    def _new_consumer(self) -> LineageConsumer:
        return LineageConsumer(self._store, self._config, self._metrics, self._stopping)

    def _keep_running(self, consumer: LineageConsumer) -> None:
        while not self._stopping.is_set():
            try:
                consumer.run()
            except Exception:
                log.exception("a Kafka consumer failed; starting it again in %.0f s", RESTART_DELAY)
                if self._stopping.wait(RESTART_DELAY):
                    return
                consumer = self._new_consumer()
