"""The multi-process deployment of docs/deployment.md, on this machine: a PostgreSQL primary
and a streaming replica (pg_basebackup), a Kafka-protocol broker (Tansu), three API nodes
reading from the replica, a publishing front (`serve --publish-to-kafka`) and two consumers
on a topic of four partitions.

Events go in through the front (batches) and straight to an API node (one per post) while
one consumer and one API node are killed with SIGKILL. A client posts to one node and reads
through another with the position it was answered. Then: every acknowledged event is stored
exactly once, no read missed the write it named, and the stored lineage — and a node's
answers from the replica — equal a single SQLite server's given the same events.
"""

from __future__ import annotations

import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, run_event
from tests.conftest import LiveServer
from tests.kafka.test_kafka_consume import ConsumerProcess, eventually
from tests.kafka_support import TansuBroker
from tests.private_postgres import primary_and_replica
from tests.readback import counts, dataset_flows, edges, relations
from upstream.api.app import create_app
from upstream.ingest.service import ingest_documents
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(900)]

FRONT_BATCHES = 60
BATCH_EVENTS = 25
DIRECT_POSTS = 400
READ_YOUR_WRITES_TRIES = 300
JOBS = 30
JSON = {"Content-Type": "application/json"}


def _event(source: str, n: int) -> dict[str, Any]:
    return run_event(
        ("multi", f"job{n % JOBS}"),
        run_id=str(uuid.uuid4()),
        time=BASE_TIME + timedelta(seconds=n),
        inputs=[ds("multi", f"raw{n % 7}")],
        outputs=[ds("multi", f"mart{n % JOBS}"), ds(source, f"out{n}")],
    )


class Acknowledged:
    """Events whose post was answered 2xx, and those sent without an answer (in flight when
    their node was killed)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.unanswered: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, events: list[dict[str, Any]], answered: bool) -> None:
        with self._lock:
            (self.events if answered else self.unanswered).extend(events)


@pytest.fixture
def deployment(tmp_path: Path, kafka_broker: TansuBroker) -> Iterator[dict[str, Any]]:
    with primary_and_replica() as (primary, replica):
        store = Store(primary.url)
        upgrade(store)
        store.dispose()
        topic = kafka_broker.create_topic(partitions=4)
        kafka = {
            "UPSTREAM_KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
            "UPSTREAM_KAFKA_TOPIC": topic,
        }
        replica_reads = {"UPSTREAM_READ_DATABASE_URL": replica.url}
        started: list[LiveServer] = []
        consumers: list[ConsumerProcess] = []
        try:
            nodes = [LiveServer(primary.url, tmp_path, replica_reads) for _ in range(3)]
            for node in nodes:
                started.append(node.start())
            front = LiveServer(primary.url, tmp_path, kafka)
            started.append(front.start("--publish-to-kafka"))
            for n in range(2):
                log = tmp_path / f"consumer-{n}.log"
                consumers.append(
                    ConsumerProcess(primary.url, kafka_broker.bootstrap, topic, "deploy", log)
                )
            yield {
                "primary": primary.url,
                "nodes": nodes,
                "front": front,
                "consumers": consumers,
            }
        finally:
            for consumer in consumers:
                consumer.stop()
            for server in started:
                server.stop()


def _post_through_front(front: str, acknowledged: Acknowledged, halfway: threading.Event) -> None:
    with httpx.Client(base_url=front, timeout=60) as http:
        for batch in range(FRONT_BATCHES):
            events = [_event("front", batch * BATCH_EVENTS + i) for i in range(BATCH_EVENTS)]
            answer = http.post("/api/v1/lineage", json=events)
            acknowledged.add(events, answer.status_code == 201)
            if batch == FRONT_BATCHES // 2:
                halfway.set()


def _post_to_doomed_node(node: str, acknowledged: Acknowledged) -> None:
    """One event per post until the node is killed: what it answered must be stored."""
    with httpx.Client(base_url=node, timeout=60) as http:
        for n in range(DIRECT_POSTS):
            event = _event("direct", n)
            try:
                answered = http.post("/api/v1/lineage", json=event).status_code == 201
            except httpx.TransportError:
                acknowledged.add([event], answered=False)
                return
            acknowledged.add([event], answered)


def _read_your_writes(writer: str, reader: str, acknowledged: Acknowledged) -> list[str]:
    """Post to `writer`, read through `reader` after the answered position: the misses."""
    misses: list[str] = []
    with httpx.Client(timeout=60) as http:
        for n in range(READ_YOUR_WRITES_TRIES):
            event = _event("ryw", n)
            posted = http.post(f"{writer}/api/v1/lineage", json=event)
            assert posted.status_code == 201, posted.text
            acknowledged.add([event], answered=True)
            after = posted.headers["X-Upstream-Position"]
            read = http.get(
                f"{reader}/api/v1/namespaces/ryw/datasets/out{n}", params={"after": after}
            )
            if read.status_code != 200:
                misses.append(f"{n}: {read.status_code} {read.text[:200]}")
    return misses


def _stored_run_counts(url: str) -> Counter[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return Counter(str(r) for r in conn.execute(sa.select(t.events.c.run_id)).scalars())
    finally:
        engine.dispose()


def test_the_deployment_loses_nothing_and_reads_its_writes(
    deployment: dict[str, Any], tmp_path: Path
) -> None:
    node_a, node_b, doomed = (node.url for node in deployment["nodes"])
    acknowledged = Acknowledged()
    halfway = threading.Event()
    misses: list[str] = []
    writers = [
        threading.Thread(
            target=_post_through_front, args=(deployment["front"].url, acknowledged, halfway)
        ),
        threading.Thread(target=_post_to_doomed_node, args=(doomed, acknowledged)),
        threading.Thread(
            target=lambda: misses.extend(_read_your_writes(node_a, node_b, acknowledged))
        ),
    ]
    for thread in writers:
        thread.start()
    assert halfway.wait(600)
    deployment["consumers"][0].process.send_signal(signal.SIGKILL)
    deployment["nodes"][2].process.send_signal(signal.SIGKILL)
    for thread in writers:
        thread.join(600)
    assert misses == []
    acknowledged_ids = {e["run"]["runId"] for e in acknowledged.events}
    assert len(acknowledged_ids) >= FRONT_BATCHES * BATCH_EVENTS + READ_YOUR_WRITES_TRIES

    # The surviving consumer takes over the killed one's partitions and stores the rest.
    primary = deployment["primary"]
    eventually(
        lambda: acknowledged_ids <= set(_stored_run_counts(primary)),
        "every acknowledged event stored",
        timeout=300,
    )
    stored = _stored_run_counts(primary)
    assert {run: stored[run] for run in acknowledged_ids} == dict.fromkeys(acknowledged_ids, 1)

    # A single SQLite server given the same events (and those of the killed node's last,
    # unanswered post that it stored nonetheless) stores the same lineage.
    unanswered = [e for e in acknowledged.unanswered if e["run"]["runId"] in stored]
    single = Store(f"sqlite:///{tmp_path / 'single.db'}")
    upgrade(single)
    for event in acknowledged.events + unanswered:
        ingest_documents(single, [event], batch=False)
    deployed = Store(primary)
    bookkeeping = {"store_state", "change_log", "change_log_head"}
    try:
        assert edges(deployed, implied=True) == edges(single, implied=True)
        assert relations(deployed) == relations(single)
        assert dataset_flows(deployed) == dataset_flows(single)
        assert {k: v for k, v in counts(deployed).items() if k not in bookkeeping} == {
            k: v for k, v in counts(single).items() if k not in bookkeeping
        }
        with deployed.read(primary=True) as conn:
            newest = str(conn.execute(sa.select(t.change_log_head.c.position)).scalar_one())
        with TestClient(create_app(Settings(db_url=str(single.url)), migrate=False)) as alone:
            window = {
                "start": str(int((BASE_TIME - timedelta(days=1)).timestamp())),
                "end": str(int((BASE_TIME + timedelta(days=1)).timestamp())),
            }
            for k in range(0, JOBS, 7):
                path = f"/v3/namespaces/multi/datasets/mart{k}/lineage"
                from_replica = httpx.get(
                    f"{node_b}{path}", params={**window, "after": newest}, timeout=60
                )
                assert from_replica.status_code == 200, from_replica.text
                assert from_replica.json() == alone.get(path, params=window).json()
    finally:
        deployed.dispose()
        single.dispose()
