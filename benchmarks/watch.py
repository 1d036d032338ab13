"""Watching lineage never slows ingest (design §4.8): batched ingest events/s with 100
subscriptions whose webhook is dead, against the same ingest with none, in the same run.

Both runs ingest the same warm-up prefix first (so the subscribed datasets exist), then time
the rest of the workload through a live server with the default watch settings (the change
log looked at every second, a failed delivery retried after 5 s, doubling). The limit is a
ratio of at least 0.9."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks.databases import fresh_database
from benchmarks.generator import in_chunks, load_summary, read_events
from benchmarks.server import Server, free_port, post_request, send_all

#: Events ingested before the clock starts, in both runs.
WARM_UP = 1_000
#: The least events/s with subscriptions, as a share of events/s without.
LIMIT = 0.9


@dataclass
class WatchResult:
    kind: str
    events: int
    subscriptions: int
    without: float
    with_subscriptions: float
    notifications: int

    @property
    def ratio(self) -> float:
        return self.with_subscriptions / self.without

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "events": self.events,
            "subscriptions": self.subscriptions,
            "events_per_s_without": round(self.without, 1),
            "events_per_s_with": round(self.with_subscriptions, 1),
            "ratio": round(self.ratio, 3),
            "limit": LIMIT,
            "notifications": self.notifications,
        }


def run_watch(
    kind: str, data_dir: Path, work_dir: Path, *, subscriptions: int = 100, batch: int = 500
) -> WatchResult:
    """Events/s of batched ingest without and with `subscriptions` dead-webhook subscriptions."""
    total = load_summary(data_dir)["events"]
    without, _ = _timed(kind, data_dir, work_dir, 0, batch, "without")
    with_subs, notes = _timed(kind, data_dir, work_dir, subscriptions, batch, "with")
    return WatchResult(kind, total - WARM_UP, subscriptions, without, with_subs, notes)


def _timed(
    kind: str, data_dir: Path, work_dir: Path, subscriptions: int, batch: int, label: str
) -> tuple[float, int]:
    lines = list(read_events(data_dir))
    warm, timed = lines[:WARM_UP], lines[WARM_UP:]
    dead = f"http://127.0.0.1:{free_port()}/nobody-listens"
    env = {"UPSTREAM_ALLOW_PRIVATE_WEBHOOKS": "true"}
    with (
        fresh_database(kind, f"watch_{label}_{kind}", work_dir) as url,
        Server(url, work_dir, workers=1, env=env) as server,
    ):
        send_all(server.ports, _batches(warm, batch), 2)
        for dataset in _datasets(warm)[:subscriptions]:
            body = {
                "watch": {"dataset": dataset},
                "direction": "both",
                "levels": 3,
                "activeDays": 36500,
                "deliver": {"webhook": {"url": dead}},
            }
            answer = httpx.post(f"{server.url}/v3/subscriptions", json=body, timeout=60)
            answer.raise_for_status()
        started = time.perf_counter()
        send_all(server.ports, _batches(timed, batch), 2)
        seconds = time.perf_counter() - started
        notes = _notifications(server.url) if subscriptions else 0
    return len(timed) / seconds, notes


def _batches(lines: list[str], size: int) -> list[bytes]:
    return [
        post_request("/api/v1/lineage", ("[" + ",".join(chunk) + "]").encode())
        for chunk in in_chunks(lines, size)
    ]


def _datasets(lines: list[str]) -> list[dict[str, str]]:
    """The datasets the events write, in order of first appearance."""
    seen: dict[tuple[str, str], None] = {}
    for line in lines:
        for output in json.loads(line).get("outputs", []):
            seen.setdefault((output["namespace"], output["name"]), None)
    return [{"namespace": ns, "name": name} for ns, name in itertools.islice(seen, None)]


def _notifications(url: str) -> int:
    listed = httpx.get(f"{url}/v3/subscriptions", timeout=60).json()["subscriptions"]
    return sum(
        httpx.get(f"{url}/v3/subscriptions/{s['id']}/deliveries?limit=1", timeout=60).json()[
            "totalCount"
        ]
        for s in listed
    )
