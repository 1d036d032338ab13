"""The multi-process deployment of docs/deployment.md, on this machine: a PostgreSQL primary
and a streaming replica (pg_basebackup), a Kafka-protocol broker (Tansu), three API nodes
reading from the replica, a publishing front (`serve --publish-to-kafka`) and two consumers
on a topic of four partitions.

Events go in through the front and straight to an API node (batches of 50; once that node is
killed, to another, the post in flight sent again) while one consumer and one API node are
killed with SIGKILL half-way; the batches keep pace with the clients below, so the kills find
every kind of write under way. Sixteen clients each post one event to a node and read it
through another with the position they were answered. Then: every acknowledged event is
stored exactly once, no read missed the write it named, and the stored lineage — and a node's
answers from the replica — equal a single SQLite server's given the same events (which it
takes meanwhile, in a process of its own).

The size is the issue's: 20,000 events in all, of which 10,000 are posted and read back by
the read-your-writes clients (`TEST_SCALEOUT_EVENTS` and `TEST_SCALEOUT_READS` change it).
Each try is two requests whose cost on the nodes is mostly the read bringing the node's graph
index to the position (a change applied: `query.graph_index.graph.applied`); the whole test
takes about three minutes on a quiet 2-core machine.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

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

EVENTS = int(os.environ.get("TEST_SCALEOUT_EVENTS", "20000"))
READ_YOUR_WRITES_TRIES = int(os.environ.get("TEST_SCALEOUT_READS", "10000"))
#: Clients posting and reading back at once, half through each pair of nodes: so many that a
#: node's group commit shares its transactions between them and their waits overlap.
READERS = 16
BATCH_EVENTS = 50
#: Of the events that are not read back, three quarters go through the front in batches, the
#: rest straight to a node in batches too.
FRONT_BATCHES = (EVENTS - READ_YOUR_WRITES_TRIES) * 3 // 4 // BATCH_EVENTS
DIRECT_EVENTS = EVENTS - READ_YOUR_WRITES_TRIES - FRONT_BATCHES * BATCH_EVENTS
JOBS = 30
#: Events per transaction of the single server the deployment is compared with.
SINGLE_BATCH = 500
JSON = {"Content-Type": "application/json"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.timeout(max(900, EVENTS // 10)),
]


def _event(source: str, n: int) -> dict[str, Any]:
    return run_event(
        ("multi", f"job{n % JOBS}"),
        run_id=str(uuid.uuid4()),
        time=BASE_TIME + timedelta(seconds=n),
        inputs=[ds("multi", f"raw{n % 7}")],
        outputs=[ds("multi", f"mart{n % JOBS}"), ds(source, f"out{n}")],
    )


class Acknowledged:
    """Events whose post was answered 2xx; `halfway` is set once half of all are. The bulk
    writers keep pace with the read-your-writes tries (`keep_pace`), so that the kills find
    every kind of write under way."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.halfway = threading.Event()
        self._tries = 0
        self._changed = threading.Condition()

    def add(self, events: list[dict[str, Any]], *, tried: bool = False) -> None:
        with self._changed:
            self.events.extend(events)
            self._tries += tried
            if len(self.events) >= EVENTS // 2:
                self.halfway.set()
            self._changed.notify_all()

    def keep_pace(self, done: int, of: int) -> None:
        """Wait until the tries are as far along as `done` of `of` writes, or a minute
        (a failed try stops its client)."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._tries * of >= done * READ_YOUR_WRITES_TRIES, timeout=60
            )


@pytest.fixture
def deployment(tmp_path: Path, kafka_broker: TansuBroker) -> Iterator[dict[str, Any]]:
    with primary_and_replica() as (primary, replica):
        topic = kafka_broker.create_topic(partitions=4)
        kafka = {
            "UPSTREAM_KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
            "UPSTREAM_KAFKA_TOPIC": topic,
        }
        replica_reads = {"UPSTREAM_READ_DATABASE_URL": replica.url}
        nodes = [LiveServer(primary.url, tmp_path, replica_reads) for _ in range(3)]
        front = LiveServer(primary.url, tmp_path, kafka)
        consumers: list[ConsumerProcess] = []
        # Started and stopped all at once: each takes seconds, mostly its imports.
        starts = [node.start for node in nodes] + [partial(front.start, "--publish-to-kafka")]
        try:
            with ThreadPoolExecutor(len(starts)) as pool:
                for started in [pool.submit(start) for start in starts]:
                    started.result()
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
            stops = [consumer.stop for consumer in consumers] + [s.stop for s in [*nodes, front]]
            with ThreadPoolExecutor(len(stops)) as pool:
                for stopped in [pool.submit(stop) for stop in stops]:
                    stopped.result()


def _batches(source: str, events: int) -> list[list[dict[str, Any]]]:
    made = [_event(source, n) for n in range(events)]
    return [made[start : start + BATCH_EVENTS] for start in range(0, events, BATCH_EVENTS)]


def _ingest_alone(path: Path, events: list[dict[str, Any]]) -> None:
    """The single SQLite server the deployment is compared with, given the same events (in
    batches, as the nodes' group commit and the consumers store them: one by one would take
    minutes). Run in a process of its own while the deployment takes them."""
    single = Store(f"sqlite:///{path}")
    upgrade(single)
    for start in range(0, len(events), SINGLE_BATCH):
        ingest_documents(single, events[start : start + SINGLE_BATCH], batch=True)
    single.dispose()


def _post_through_front(
    front: str, batches: list[list[dict[str, Any]]], acknowledged: Acknowledged
) -> None:
    with httpx.Client(base_url=front, timeout=60) as http:
        for done, events in enumerate(batches):
            acknowledged.keep_pace(done, len(batches))
            answer = http.post("/api/v1/lineage", json=events)
            assert answer.status_code == 201, answer.text
            acknowledged.add(events)


def _post_direct(
    doomed: str, survivor: str, batches: list[list[dict[str, Any]]], acknowledged: Acknowledged
) -> None:
    """Batches to `doomed` until it is killed, then to `survivor`, the post in flight sent
    again: what either answered must be stored, once."""
    node = doomed
    with httpx.Client(timeout=60) as http:
        for done, events in enumerate(batches):
            acknowledged.keep_pace(done, len(batches))
            try:
                answer = http.post(f"{node}/api/v1/lineage", json=events)
            except httpx.TransportError:
                assert node == doomed, "only the killed node fails"
                node = survivor
                answer = http.post(f"{node}/api/v1/lineage", json=events)
            assert answer.status_code == 201, answer.text
            acknowledged.add(events)


class _KeptAlive:
    """One HTTP/1.1 connection to a node, kept alive, of the standard library: the
    read-your-writes clients send two requests a try, 20,000 at the issue's size, and
    httpx's own work per request cost them more CPU than the rest of the test's client side
    (bodies are encoded once per try, before the clients start)."""

    def __init__(self, url: str) -> None:
        parsed = urlsplit(url)
        self._http = http.client.HTTPConnection(str(parsed.hostname), parsed.port, timeout=60)

    def ask(
        self, method: str, path: str, body: bytes | None = None
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """The answer and its body. A connection the node closed while it was idle (uvicorn's
        keep-alive timeout, a few seconds on a busy machine) is opened again and the request
        sent once more: a post sent again is stored once."""
        for attempt in (1, 2):
            try:
                self._http.request(method, path, body=body, headers=JSON if body else {})
                answer = self._http.getresponse()
                return answer, answer.read()
            except ConnectionError:
                self._http.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._http.close()


def _read_your_writes(
    writer: str, reader: str, tries: list[dict[str, Any]], acknowledged: Acknowledged
) -> list[str]:
    """Post each event of `tries` to `writer`, read its dataset through `reader` after the
    answered position: the misses."""
    misses: list[str] = []
    bodies = [json.dumps(event).encode() for event in tries]
    outputs = [
        next(d["name"] for d in event["outputs"] if d["namespace"] == "ryw") for event in tries
    ]
    posting, reading = _KeptAlive(writer), _KeptAlive(reader)
    try:
        for event, body, output in zip(tries, bodies, outputs, strict=True):
            posted, text = posting.ask("POST", "/api/v1/lineage", body)
            assert posted.status == 201, text
            acknowledged.add([event], tried=True)
            after = quote(str(posted.getheader("X-Upstream-Position")))
            read, text = reading.ask(
                "GET", f"/api/v1/namespaces/ryw/datasets/{output}?after={after}"
            )
            if read.status != 200:
                misses.append(f"{output}: {read.status} {text[:200]!r}")
    finally:
        posting.close()
        reading.close()
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
    front_batches = _batches("front", FRONT_BATCHES * BATCH_EVENTS)
    direct_batches = _batches("direct", DIRECT_EVENTS)
    tries = [_event("ryw", n) for n in range(READ_YOUR_WRITES_TRIES)]
    every_event = [e for b in [*front_batches, *direct_batches, tries] for e in b]
    single_path = tmp_path / "single.db"
    ingesting = multiprocessing.get_context("spawn").Process(
        target=_ingest_alone, args=(single_path, every_event), daemon=True
    )
    ingesting.start()
    acknowledged = Acknowledged()
    misses: list[str] = []
    readers = [
        (node_a, node_b, tries[k::READERS]) if k % 2 == 0 else (node_b, node_a, tries[k::READERS])
        for k in range(READERS)
    ]
    front = deployment["front"].url
    writers = [
        threading.Thread(target=_post_through_front, args=(front, front_batches, acknowledged)),
        threading.Thread(target=_post_direct, args=(doomed, node_a, direct_batches, acknowledged)),
    ] + [
        threading.Thread(
            target=lambda pair=pair: misses.extend(_read_your_writes(*pair, acknowledged))
        )
        for pair in readers
    ]
    for thread in writers:
        thread.start()
    assert acknowledged.halfway.wait(600)
    deployment["consumers"][0].process.send_signal(signal.SIGKILL)
    deployment["nodes"][2].process.send_signal(signal.SIGKILL)
    for thread in writers:
        thread.join(max(600, EVENTS // 10))
    assert misses == []
    acknowledged_ids = {e["run"]["runId"] for e in acknowledged.events}
    assert acknowledged_ids == {e["run"]["runId"] for e in every_event}
    assert len(acknowledged_ids) == EVENTS

    # The surviving consumer takes over the killed one's partitions and stores the rest.
    primary = deployment["primary"]
    eventually(
        lambda: acknowledged_ids <= set(_stored_run_counts(primary)),
        "every acknowledged event stored",
        # The rest is what the killed consumer had fetched and the pending front batches:
        # thousands of events on a machine whose other tests may hold both cores.
        timeout=max(600, EVENTS // 10),
    )
    stored = _stored_run_counts(primary)
    assert stored == dict.fromkeys(acknowledged_ids, 1)

    # A single SQLite server given the same events stores the same lineage.
    ingesting.join(600)
    assert ingesting.exitcode == 0
    single = Store(f"sqlite:///{single_path}")
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
