"""Consuming OpenLineage events from a real Kafka-protocol broker (Tansu, started by the
`kafka_broker` fixture) into SQLite and PostgreSQL: what the OpenLineage client's Kafka
transport writes is stored as if posted, offsets follow the stored events, bad messages are
refused alone and dead-lettered, redelivery stores nothing twice, and an unreachable database
or broker pauses the consumer without losing anything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from confluent_kafka import Producer
from fastapi.testclient import TestClient
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.serde import Serde
from openlineage.client.transport.kafka import KafkaConfig, KafkaTransport
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tests.api.test_metrics import scrape, value
from tests.builders import PRODUCER, ds, run_event
from tests.ingest.test_body_bounds import MB, one_event_of_empty_objects
from tests.ingest.test_openlineage_client import summaries_event
from tests.kafka_support import QUICK_GROUP, TansuBroker, TcpProxy, free_port
from tests.readback import counts, dataset_flows, edges, relations
from upstream.api.app import create_app
from upstream.ingest.body import Limits
from upstream.ingest.service import ingest_documents
from upstream.kafka.consumer import ConsumerConfig, LineageConsumer
from upstream.kafka.metrics import ConsumerMetrics
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

EVENTS = "upstream_kafka_events_total"
LIMITS = Limits(max_bytes=10_000_000, max_events=5_000, max_values=200_000)


def eventually(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    """Wait for `condition`; the deadline only bounds a failing test, it measures nothing."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


@contextmanager
def consuming(
    db_url: str,
    bootstrap: str,
    topic: str,
    *,
    group: str | None = None,
    dead_letter_topic: str | None = None,
    batch_messages: int = 500,
) -> Iterator[LineageConsumer]:
    """A consumer running on a thread of its own until the block ends."""
    store = Store(db_url)
    config = ConsumerConfig(
        bootstrap_servers=bootstrap,
        topic=topic,
        group=group or f"group-{uuid.uuid4().hex[:8]}",
        limits=LIMITS,
        dead_letter_topic=dead_letter_topic,
        batch_messages=batch_messages,
        client_options=QUICK_GROUP,
    )
    stop = threading.Event()
    consumer = LineageConsumer(store, config, ConsumerMetrics(CollectorRegistry()), stop)
    thread = threading.Thread(target=consumer.run)
    thread.start()
    try:
        yield consumer
    finally:
        stop.set()
        thread.join(60)
        store.dispose()
    assert not thread.is_alive()


def transport(broker: TansuBroker, topic: str, *, flush: bool = True) -> KafkaTransport:
    """OpenLineage's own Kafka transport, configured as a producer would configure it."""
    return KafkaTransport(
        KafkaConfig(config={"bootstrap.servers": broker.bootstrap}, topic=topic, flush=flush)
    )


def stored_alike(kafka_store: Store, http_store: Store) -> None:
    assert edges(kafka_store, implied=True) == edges(http_store, implied=True)
    assert relations(kafka_store) == relations(http_store)
    assert dataset_flows(kafka_store) == dataset_flows(http_store)
    # store_state says how the schema and derived tables were prepared, and the change log
    # how many transactions wrote (a poll of messages is one, each post one), not what was
    # ingested.
    bookkeeping = {"store_state", "change_log", "change_log_head"}
    lineage_counts = [
        {table: n for table, n in counts(s).items() if table not in bookkeeping}
        for s in (kafka_store, http_store)
    ]
    assert lineage_counts[0] == lineage_counts[1]


def test_the_kafka_transport_stores_what_a_post_stores(
    kafka_broker: TansuBroker, db_url: str, store: Store, tmp_path: Path, fixtures_dir: Path
) -> None:
    """Real producers' events (dbt) and a Lineage Job Facet built with the client's classes,
    through OpenLineage's KafkaTransport, give the very rows the same events posted give."""
    topic = kafka_broker.create_topic(partitions=2)
    client = OpenLineageClient(transport=transport(kafka_broker, topic))
    dbt = [
        json.loads(path.read_text())
        for path in sorted((fixtures_dir / "dbt-csv-to-postgres").glob("event_*.json"))
    ]
    facet_event = summaries_event(str(uuid.uuid4()))
    client.emit(facet_event)
    kafka_broker.produce(topic, [json.dumps(doc).encode() for doc in dbt], key=b"run:dbt/all")
    expected = [json.loads(Serde.to_json(facet_event)), *dbt]

    http_store = Store(f"sqlite:///{tmp_path / 'posted.db'}")
    upgrade(http_store)
    for document in expected:
        ingest_documents(http_store, [document], batch=False)
    with consuming(db_url, kafka_broker.bootstrap, topic) as consumer:
        eventually(lambda: consumer.totals.consumed == len(expected), "every event consumed")
    assert consumer.totals.refused == 0
    assert consumer.totals.stored + consumer.totals.duplicates == len(expected)
    assert counts(store)["events"] == counts(http_store)["events"]
    assert (
        "job:airflow://prod/upstream.extract",
        "job:https://example.com/jobs/build_summaries",
    ) in edges(store)
    stored_alike(store, http_store)
    http_store.dispose()


def test_a_burst_of_1000_events_is_stored_and_committed(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """1,000 runs emitted by the OpenLineage client without waiting for each (`flush: false`),
    keyed by job as the transport keys them, over four partitions."""
    topic = kafka_broker.create_topic(partitions=4)
    emitter = transport(kafka_broker, topic, flush=False)
    client = OpenLineageClient(transport=emitter)
    for n in range(1000):
        client.emit(
            RunEvent(
                eventType=RunState.COMPLETE,
                eventTime=datetime.now(UTC).isoformat(),
                run=Run(runId=str(uuid.uuid4())),
                job=Job(namespace="burst", name=f"job{n % 25}"),
                producer=PRODUCER,
                inputs=[InputDataset(namespace="pg", name=f"in{n % 25}")],
                outputs=[OutputDataset(namespace="pg", name=f"out{n}")],
            )
        )
    assert emitter.wait_for_completion(30)
    group = f"burst-{uuid.uuid4().hex[:6]}"
    with consuming(db_url, kafka_broker.bootstrap, topic, group=group) as consumer:
        eventually(lambda: consumer.totals.stored == 1000, "1000 events stored")
    assert consumer.totals.duplicates == 0
    assert counts(store)["events"] == 1000
    assert counts(store)["runs"] == 1000
    assert len(dataset_flows(store)) == 1000  # in{n % 25} -> out{n}, one per run
    assert sum(kafka_broker.committed(topic, group, 4)) == 1000


def test_bad_messages_are_refused_alone_and_dead_lettered(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """One batch of good and bad messages: the good are stored, the bad are copied to the
    dead-letter topic with the error, and every offset is committed (nothing blocks)."""
    topic = kafka_broker.create_topic(partitions=1)
    dead = kafka_broker.create_topic(partitions=1, prefix="refused")
    no_name = run_event(("etl", ""))
    good = [run_event(("etl", f"good{n}"), outputs=[ds("pg", f"t{n}")]) for n in range(3)]
    values: list[bytes | None] = [
        json.dumps(good[0]).encode(),
        b"{not json",
        json.dumps(no_name).encode(),
        json.dumps(good[1]).encode(),
        None,
        json.dumps(good[2]).encode(),
    ]
    kafka_broker.produce(topic, values, key=b"run:etl/mixed")
    group = f"mixed-{uuid.uuid4().hex[:6]}"
    with consuming(
        db_url, kafka_broker.bootstrap, topic, group=group, dead_letter_topic=dead
    ) as consumer:
        eventually(lambda: consumer.totals.consumed == 6, "six messages consumed")
        eventually(lambda: kafka_broker.committed(topic, group, 1) == [6], "offsets committed")
    assert (consumer.totals.stored, consumer.totals.refused) == (3, 3)
    assert counts(store)["events"] == 3
    assert {job for _, job, _, _ in relations(store)} == {"etl/good0", "etl/good1", "etl/good2"}
    copies = kafka_broker.read_all(dead, expected=3)
    headers = [dict(m.headers()) for m in copies]  # type: ignore[attr-defined]
    assert [m.value() for m in copies] == [values[1], values[2], None]  # type: ignore[attr-defined]
    assert [m.key() for m in copies] == [b"run:etl/mixed"] * 3  # type: ignore[attr-defined]
    assert [h["upstream.offset"] for h in headers] == [b"1", b"2", b"4"]
    assert {h["upstream.topic"] for h in headers} == {topic.encode()}
    assert [h["upstream.reason"] for h in headers] == [b"malformed", b"invalid", b"malformed"]
    assert headers[1]["upstream.error"].startswith(b"job.name:")
    assert headers[2]["upstream.error"] == b"the message has no value (a tombstone)"


def _peak_rss_reset() -> None:
    """Start measuring this process's peak memory afresh (Linux: `clear_refs` 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")
def test_a_value_that_would_parse_into_millions_of_objects_is_refused_alone(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """The 10 kB gzip value of one event whose facet holds 3.2 million empty objects is
    refused on its bytes (`max_event_values`), as the same POST body is answered 413; the
    messages polled with it are stored, and the consumer's memory barely moves (its peak is
    printed: stored, such a value took about 150 MB)."""
    bomb = one_event_of_empty_objects()
    assert len(bomb) < 12_000
    topic = kafka_broker.create_topic(partitions=1)
    dead = kafka_broker.create_topic(partitions=1, prefix="refused")
    good = [run_event(("etl", f"around{n}"), outputs=[ds("pg", f"r{n}")]) for n in range(2)]
    values = [json.dumps(good[0]).encode(), bomb, json.dumps(good[1]).encode()]
    kafka_broker.produce(topic, values)
    group = f"bomb-{uuid.uuid4().hex[:6]}"
    _peak_rss_reset()
    before = _peak_rss()
    with consuming(
        db_url, kafka_broker.bootstrap, topic, group=group, dead_letter_topic=dead
    ) as consumer:
        eventually(lambda: consumer.totals.consumed == 3, "three messages consumed")
        eventually(lambda: kafka_broker.committed(topic, group, 1) == [3], "offsets committed")
    peak = _peak_rss()
    print(f"consumer RSS: {before / MB:.0f} MB before, peak {peak / MB:.0f} MB while consuming")
    assert (consumer.totals.stored, consumer.totals.refused) == (2, 1)
    assert {job for _, job, _, _ in relations(store)} == {"etl/around0", "etl/around1"}
    (copy,) = kafka_broker.read_all(dead, expected=1)
    headers = dict(copy.headers())  # type: ignore[attr-defined]
    assert headers["upstream.reason"] == b"too_large"
    assert headers["upstream.error"] == (
        b"the event holds more than 200000 JSON values (the server's max_event_values); "
        b"split it into smaller events"
    )
    assert peak - before < 100 * MB


def test_reading_a_topic_again_stores_nothing_twice(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """A second group reads every message again (as after a crash before a commit): each
    event is a duplicate and no row changes."""
    topic = kafka_broker.create_topic(partitions=2)
    documents = [run_event(("etl", f"job{n}"), outputs=[ds("pg", f"t{n}")]) for n in range(40)]
    kafka_broker.produce(topic, [json.dumps(d).encode() for d in documents])
    with consuming(db_url, kafka_broker.bootstrap, topic) as first:
        eventually(lambda: first.totals.stored == 40, "40 events stored")
    before = counts(store)
    with consuming(db_url, kafka_broker.bootstrap, topic) as again:
        eventually(lambda: again.totals.consumed == 40, "40 events read again")
    assert (again.totals.stored, again.totals.duplicates) == (0, 40)
    assert counts(store) == before


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_database_outage_pauses_the_consumer_and_loses_nothing(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """The consumer reaches PostgreSQL through a proxy that is cut: the batch in hand waits,
    its offsets stay uncommitted, and once the database is reachable again everything is
    stored, without a restart."""
    pg = sa.make_url(db_url)
    proxy = TcpProxy(pg.port or 5432)
    through_proxy = pg.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    topic = kafka_broker.create_topic(partitions=1)
    group = f"outage-{uuid.uuid4().hex[:6]}"
    first = [run_event(("etl", f"before{n}")) for n in range(5)]
    later = [run_event(("etl", f"during{n}")) for n in range(5)]
    try:
        with consuming(through_proxy, kafka_broker.bootstrap, topic, group=group) as consumer:
            kafka_broker.produce(topic, [json.dumps(d).encode() for d in first])
            eventually(lambda: consumer.totals.stored == 5, "the first events stored")
            proxy.cut()
            kafka_broker.produce(topic, [json.dumps(d).encode() for d in later])
            eventually(lambda: consumer.totals.waiting, "the consumer paused")
            assert kafka_broker.committed(topic, group, 1) == [5]
            assert counts(store)["events"] == 5
            proxy.restore()
            eventually(lambda: consumer.totals.stored == 10, "the later events stored")
            eventually(lambda: kafka_broker.committed(topic, group, 1) == [10], "committed")
            assert not consumer.totals.waiting
    finally:
        proxy.cut()
    assert consumer.totals.refused == 0
    assert counts(store)["events"] == 10


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_rebalance_while_paused_loses_nothing_and_stores_nothing_twice(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """A consumer waits for its database with a batch of both partitions in hand; a second
    consumer joins and takes one partition. The first stores its batch when the database is
    back but commits only the partition it still owns; the second reads the other from its
    committed offset. Every event is stored once and every offset committed."""
    pg = sa.make_url(db_url)
    proxy = TcpProxy(pg.port or 5432)
    through_proxy = pg.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    topic = kafka_broker.create_topic(partitions=2)
    group = f"rebalance-{uuid.uuid4().hex[:6]}"
    documents = [run_event(("etl", f"job{n}")) for n in range(20)]
    try:
        with consuming(through_proxy, kafka_broker.bootstrap, topic, group=group) as first:
            eventually(lambda: len(first.partitions) == 2, "both partitions assigned")
            proxy.cut()
            for partition in (0, 1):
                values = [json.dumps(d).encode() for d in documents[partition::2]]
                kafka_broker.produce(topic, values, partition=partition)
            eventually(lambda: first.totals.waiting, "the first consumer paused")
            with consuming(db_url, kafka_broker.bootstrap, topic, group=group) as second:
                eventually(lambda: len(first.partitions) == 1, "a partition moved")
                proxy.restore()
                eventually(lambda: counts(store)["events"] == 20, "every event stored")
                eventually(
                    lambda: kafka_broker.committed(topic, group, 2) == [10, 10],
                    "every offset committed",
                )
                eventually(lambda: not first.totals.waiting, "the first consumer resumed")
    finally:
        proxy.cut()
    assert first.totals.refused == second.totals.refused == 0
    assert counts(store)["events"] == counts(store)["runs"] == 20
    assert first.totals.stored + second.totals.stored == 20
    # An event both read (the moved partition's, when the first had it in hand) is a duplicate.
    duplicates = first.totals.duplicates + second.totals.duplicates
    assert first.totals.consumed + second.totals.consumed == 20 + duplicates


def test_losing_the_broker_pauses_the_consumer_until_it_is_back(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    """Clients reach a broker of this test's own through a proxy; cut, the consumer keeps
    running and, once the broker is reachable again, goes on with the new events."""
    from tests.conftest import tansu_binary

    advertised = free_port()
    broker = TansuBroker(tansu_binary(), tmp_path / "tansu.log", advertised_port=advertised)
    proxy = TcpProxy(broker.port, port=advertised)
    try:
        topic = broker.create_topic(partitions=1)
        with consuming(db_url, broker.bootstrap, topic) as consumer:
            broker.produce(
                topic, [json.dumps(run_event(("etl", f"a{n}"))).encode() for n in range(3)]
            )
            eventually(lambda: consumer.totals.stored == 3, "the first events stored")
            proxy.cut()
            eventually(lambda: consumer.last_client_error is not None, "the loss noticed")
            proxy.restore()
            broker.produce(
                topic, [json.dumps(run_event(("etl", f"b{n}"))).encode() for n in range(3)]
            )
            eventually(lambda: consumer.totals.stored == 6, "the later events stored")
    finally:
        proxy.cut()
        broker.stop()
    assert counts(store)["events"] == 6


class ConsumerProcess:
    """`upstream consume` in a process of its own."""

    def __init__(
        self, db_url: str, bootstrap: str, topic: str, group: str, log: Path, *extra: str
    ) -> None:
        env = {**os.environ, "UPSTREAM_KAFKA_OPTIONS": json.dumps(QUICK_GROUP)}
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "upstream",
                    "consume",
                    "--bootstrap-servers",
                    bootstrap,
                    "--topic",
                    topic,
                    "--group",
                    group,
                    "--db",
                    db_url,
                    "--batch-size",
                    "200",
                    *extra,
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode


@pytest.mark.slow
def test_two_consumers_share_four_partitions_and_a_killed_one_loses_nothing(
    kafka_broker: TansuBroker, db_url: str, store: Store, tmp_path: Path
) -> None:
    """10,000 events flow into a 4-partition topic read by two `upstream consume` processes
    of one group; one is killed (SIGKILL, mid-batch) and a third joins: in the end every event
    is stored exactly once and every offset is committed."""
    topic = kafka_broker.create_topic(partitions=4)
    group = f"scale-{uuid.uuid4().hex[:6]}"
    total = 10_000
    log = tmp_path / "consumers.log"
    first, second = (
        ConsumerProcess(db_url, kafka_broker.bootstrap, topic, group, log) for _ in range(2)
    )

    def produce() -> None:
        producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5})
        for n in range(total):
            job = f"job{n % 97}"
            document = run_event(("scale", job), outputs=[ds("pg", f"t{n}")])
            producer.produce(topic, key=f"run:scale/{job}", value=json.dumps(document))
            if n % 1000 == 999:
                producer.flush(30)
        assert producer.flush(30) == 0

    producing = threading.Thread(target=produce)
    producing.start()
    stored = lambda: counts(store)["events"]  # noqa: E731
    replacement: ConsumerProcess | None = None
    try:
        eventually(lambda: stored() >= 2_000, "2,000 events stored", timeout=180)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(10)
        replacement = ConsumerProcess(db_url, kafka_broker.bootstrap, topic, group, log)
        producing.join(120)
        eventually(lambda: stored() == total, "every event stored", timeout=300)
        eventually(
            lambda: sum(kafka_broker.committed(topic, group, 4)) == total,
            "every offset committed",
            timeout=120,
        )
    finally:
        for process in (first, second, replacement):
            if process is not None:
                process.stop()
        producing.join(60)
    assert first.process.returncode == -signal.SIGKILL
    assert counts(store)["events"] == total
    assert counts(store)["runs"] == total
    assert len(relations(store)) == total  # one write per run, none twice


def test_serve_runs_consumers_beside_the_api_and_metrics_show_them(
    kafka_broker: TansuBroker, db_url: str, store: Store
) -> None:
    """With `kafka_consumers`, the API process consumes too; `/metrics` counts what was
    consumed, stored, refused, and shows each partition's lag and the commit time."""
    topic = kafka_broker.create_topic(partitions=2)
    settings = Settings(
        db_url=db_url,
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=topic,
        kafka_group=f"serve-{uuid.uuid4().hex[:6]}",
        kafka_consumers=1,
        kafka_options=QUICK_GROUP,
    )
    good = [json.dumps(run_event(("etl", f"job{n}"))).encode() for n in range(4)]
    kafka_broker.produce(topic, [*good, good[0], b"[]"], key=b"run:etl/one")
    with TestClient(create_app(settings, migrate=False)) as client:

        def stored() -> float:
            return value(
                scrape(client), "upstream_kafka_events_total", topic=topic, result="stored"
            )

        eventually(lambda: stored() == 4, "four events stored")
        samples = scrape(client)
    assert value(samples, "upstream_kafka_messages_consumed_total", topic=topic) == 6
    assert value(samples, EVENTS, topic=topic, result="duplicate") == 1
    assert (
        value(samples, "upstream_kafka_messages_refused_total", topic=topic, reason="malformed")
        == 1
    )
    assert value(samples, "upstream_kafka_batch_commit_seconds_count") >= 1
    # All six messages share one key, so one partition holds them and the other is empty.
    lags = {
        labels: number
        for (name, labels), number in samples.items()
        if name == "upstream_kafka_consumer_lag"
    }
    assert set(lags.values()) == {0.0}
    assert value(samples, "upstream_kafka_consumers_waiting") == 0
    assert counts(store)["events"] == 4


def test_upstream_consume_serves_metrics_and_stops_cleanly_on_sigterm(
    kafka_broker: TansuBroker, db_url: str, store: Store, tmp_path: Path
) -> None:
    topic = kafka_broker.create_topic(partitions=1)
    kafka_broker.produce(
        topic, [json.dumps(run_event(("etl", f"j{n}"))).encode() for n in range(7)]
    )
    port = free_port()
    log = tmp_path / "consume.log"
    consumer = ConsumerProcess(
        db_url, kafka_broker.bootstrap, topic, "metrics", log, "--metrics-port", str(port)
    )

    def stored() -> float:
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
        except httpx.HTTPError:
            return 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == EVENTS and sample.labels.get("result") == "stored":
                    return sample.value
        return 0.0

    try:
        eventually(lambda: stored() == 7, "seven events stored, as /metrics says")
    finally:
        returncode = consumer.stop()
    assert returncode == 0
    assert "stopped: 7 consumed · 7 stored · 0 duplicates · 0 refused" in log.read_text()
    assert counts(store)["events"] == 7
