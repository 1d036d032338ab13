"""What a team watches on a consumer: events consumed, stored, already known and refused, the
lag of every partition, how long each batch took to commit, and whether it waits for the
database. Registered on the registry it is given: the API's own when `upstream serve` runs
consumers (so `/metrics` shows them), a fresh one under `upstream consume`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Commit time buckets in seconds: a small batch on SQLite to a large one on a busy database.
COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ConsumerMetrics:
    """The counters and gauges of every consumer of one process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.messages = Counter(
            "upstream_kafka_messages_consumed",
            "Kafka messages read, by topic (a message holds one event, or an array of them).",
            ["topic"],
            registry=registry,
        )
        self.events = Counter(
            "upstream_kafka_events",
            "Events from Kafka by result: stored, duplicate when the same event was stored "
            "before (a redelivery, which changes nothing), or abandoned when a publishing "
            "front's batch was not wholly acknowledged (none of it is stored).",
            ["topic", "result"],
            registry=registry,
        )
        self.refused = Counter(
            "upstream_kafka_messages_refused",
            "Kafka messages stored nowhere, by reason (malformed, too_large, invalid, "
            "refused_by_store); copied to the dead-letter topic when one is configured.",
            ["topic", "reason"],
            registry=registry,
        )
        self.lag = Gauge(
            "upstream_kafka_consumer_lag",
            "Messages of a partition not yet read by this group, as of the last batch.",
            ["topic", "partition"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.commit_seconds = Histogram(
            "upstream_kafka_batch_commit_seconds",
            "Time to store a batch in one transaction and commit its offsets.",
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        self.waiting = Gauge(
            "upstream_kafka_consumers_waiting",
            "Consumers paused because the database or the dead-letter topic is unavailable.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.commit_failures = Counter(
            "upstream_kafka_offset_commit_failures",
            "Offset commits the broker refused (after a rebalance); the batch is delivered "
            "again and stores nothing twice.",
            registry=registry,
        )
