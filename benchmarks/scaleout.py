"""`python -m benchmarks scaleout`: the multi-machine topology's costs, on this machine
(issue 40).

One run starts a private PostgreSQL primary with a streaming replica (`pg_basebackup`, as
the slow deployment test does), a Tansu broker (a topic of 4 partitions) and `upstream serve`
processes, then measures, each against its own baseline of the same run:

1. **Acknowledgement**: the same single-event posts over the same connections to a storing
   server (direct ingest) and to a publishing front (`--publish-to-kafka`): events
   acknowledged per second and the p99 of an answer's time; ratios front / direct.
2. **Replica lag under batched ingest**: batches posted to the primary's server while the
   primary's and the replica's change-log heads are sampled every `SAMPLE_SECONDS`; each
   position's lag is the time between the samples that first show it on each. Its baseline
   is the time one batch takes to be acknowledged.
3. **The wait `?after=` adds**: a write, then a read of what it wrote through a server
   reading the replica — without `after`, with the write's position, and, for a post to the
   front, with its Kafka offsets (a consumer beside the reading server stores them); the
   read's p50 and p99 in each case, and the ratio to the read without `after`.

Numbers on a 2-core machine shared with other work are noisy: run it more than once.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.private_postgres import primary_and_replica

from benchmarks.kafka_ingest import PARTITIONS, QUICK_GROUP, start_broker
from benchmarks.server import Server, post_request, send_all
from upstream.store.change_log import position
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

#: Seconds between two looks at the primary's and the replica's heads.
SAMPLE_SECONDS = 0.01
POST_PATH = "/api/v1/lineage"


@dataclass
class ScaleoutResult:
    posts: int
    concurrency: int
    direct_events_per_s: float
    front_events_per_s: float
    direct_p99_ms: float
    front_p99_ms: float
    batch_events: int
    batches: int
    batch_ack_p50_ms: float
    replica_lag_p50_ms: float
    replica_lag_p99_ms: float
    replica_lag_max_ms: float
    reads: int
    read_p50_ms: float
    read_p99_ms: float
    read_after_p50_ms: float
    read_after_p99_ms: float
    read_after_kafka_p50_ms: float
    read_after_kafka_p99_ms: float

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["ratios"] = {
            "front/direct events per s": self.front_events_per_s / self.direct_events_per_s,
            "front/direct p99": self.front_p99_ms / self.direct_p99_ms,
            "replica lag p99 / batch ack p50": self.replica_lag_p99_ms / self.batch_ack_p50_ms,
            "read after position / read, p50": self.read_after_p50_ms / self.read_p50_ms,
            "read after Kafka offsets / read, p50": self.read_after_kafka_p50_ms / self.read_p50_ms,
        }
        return found


def _event(n: int, outputs: int = 50) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": "2026-01-01T00:00:00Z",
        "run": {"runId": str(uuid.uuid4())},
        "job": {"namespace": "bench", "name": f"job{n % outputs}"},
        "inputs": [{"namespace": "bench", "name": f"in{n % outputs}"}],
        "outputs": [{"namespace": "bench", "name": f"out{n % outputs}"}],
        "producer": "https://example.com/bench",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _posts(count: int) -> list[bytes]:
    return [post_request(POST_PATH, json.dumps(_event(n)).encode()) for n in range(count)]


def _ms(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


def _acknowledge(server: Server, posts: int, concurrency: int) -> tuple[float, float]:
    """Events per second and p99 answer ms of `posts` single-event posts."""
    requests = _posts(posts)
    latencies: list[float] = []
    started = time.perf_counter()
    send_all(server.ports, requests, concurrency, latencies=latencies)
    return posts / (time.perf_counter() - started), _ms(latencies, 0.99)


def _replica_lag(
    server: Server, primary_url: str, replica_url: str, batches: int, batch_events: int
) -> tuple[list[float], list[float]]:
    """Each position's replica lag (seconds) while `batches` batches are posted, and each
    batch's acknowledgement seconds."""
    seen: dict[str, dict[int, float]] = {"primary": {}, "replica": {}}
    stop = threading.Event()

    def sample(name: str, url: str) -> None:
        store = Store(url)
        newest = 0
        try:
            while not stop.is_set():
                with store.read(primary=True) as conn:
                    head = position(conn)
                now = time.perf_counter()
                for p in range(newest + 1, head + 1):
                    seen[name][p] = now
                newest = max(newest, head)
                time.sleep(SAMPLE_SECONDS)
        finally:
            store.dispose()

    samplers = [
        threading.Thread(target=sample, args=(name, url))
        for name, url in (("primary", primary_url), ("replica", replica_url))
    ]
    for thread in samplers:
        thread.start()
    acks: list[float] = []
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for b in range(batches):
            body = [_event(b * batch_events + n, outputs=500) for n in range(batch_events)]
            sent = time.perf_counter()
            assert client.post(POST_PATH, json=body).status_code == 201
            acks.append(time.perf_counter() - sent)
    time.sleep(1.0)  # the replica replays the last batches
    stop.set()
    for thread in samplers:
        thread.join()
    lags = [seen["replica"][p] - at for p, at in seen["primary"].items() if p in seen["replica"]]
    return [max(lag, 0.0) for lag in lags], acks


def _reads(writer: str, reader: str, count: int, *, after: bool) -> list[float]:
    """Seconds of each read through `reader` of what a post to `writer` just wrote."""
    seconds: list[float] = []
    with httpx.Client(timeout=60) as http:
        for n in range(count):
            posted = http.post(f"{writer}{POST_PATH}", json=_event(n))
            assert posted.status_code == 201, posted.text
            params = {"after": posted.headers["X-Upstream-Position"]} if after else {}
            started = time.perf_counter()
            answer = http.get(
                f"{reader}/api/v1/namespaces/bench/datasets/out{n % 50}", params=params
            )
            seconds.append(time.perf_counter() - started)
            if after:
                assert answer.status_code == 200, answer.text
    return seconds


def run_scaleout(work_dir: Path, posts: int, concurrency: int, reads: int) -> ScaleoutResult:
    from confluent_kafka.admin import AdminClient, NewTopic

    work_dir.mkdir(parents=True, exist_ok=True)
    broker, bootstrap = start_broker(work_dir)
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result(30)
        kafka = {
            "UPSTREAM_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "UPSTREAM_KAFKA_TOPIC": topic,
            "UPSTREAM_KAFKA_OPTIONS": json.dumps(QUICK_GROUP),
        }
        with primary_and_replica() as (primary, replica):
            store = Store(primary.url)
            upgrade(store)
            store.dispose()
            with (
                Server(primary.url, work_dir, workers=1) as direct,
                Server(
                    primary.url,
                    work_dir,
                    workers=1,
                    env={**kafka, "UPSTREAM_PUBLISH_TO_KAFKA": "true"},
                ) as front,
                Server(
                    primary.url,
                    work_dir,
                    workers=1,
                    env={
                        **kafka,
                        "UPSTREAM_READ_DATABASE_URL": replica.url,
                        "UPSTREAM_KAFKA_CONSUMERS": "1",
                        "UPSTREAM_POSITION_WAIT": "30",
                    },
                ) as reading,
            ):
                _acknowledge(direct, 200, concurrency)  # warm both up
                _acknowledge(front, 200, concurrency)
                direct_rate, direct_p99 = _acknowledge(direct, posts, concurrency)
                front_rate, front_p99 = _acknowledge(front, posts, concurrency)
                batch_events, batches = 500, 20
                lags, acks = _replica_lag(direct, primary.url, replica.url, batches, batch_events)
                _reads(front.url, reading.url, 3, after=True)  # the consumer joined its group
                plain = _reads(direct.url, reading.url, reads, after=False)
                after = _reads(direct.url, reading.url, reads, after=True)
                after_kafka = _reads(front.url, reading.url, reads, after=True)
    finally:
        broker.terminate()
        broker.wait(10)
    return ScaleoutResult(
        posts=posts,
        concurrency=concurrency,
        direct_events_per_s=direct_rate,
        front_events_per_s=front_rate,
        direct_p99_ms=direct_p99,
        front_p99_ms=front_p99,
        batch_events=batch_events,
        batches=batches,
        batch_ack_p50_ms=1000 * statistics.median(acks),
        replica_lag_p50_ms=_ms(lags, 0.5),
        replica_lag_p99_ms=_ms(lags, 0.99),
        replica_lag_max_ms=1000 * max(lags),
        reads=reads,
        read_p50_ms=_ms(plain, 0.5),
        read_p99_ms=_ms(plain, 0.99),
        read_after_p50_ms=_ms(after, 0.5),
        read_after_p99_ms=_ms(after, 0.99),
        read_after_kafka_p50_ms=_ms(after_kafka, 0.5),
        read_after_kafka_p99_ms=_ms(after_kafka, 0.99),
    )
