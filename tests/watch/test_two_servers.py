"""Two server processes on one database, each running its watcher: every notification is
created once and delivered once, to a receiver that records ids."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from tests.watch.test_notifications import NS, job_run
from tests.watch_support import SECRET, Receiver, receiver_running

WATCHING = {
    "UPSTREAM_ALLOW_PRIVATE_WEBHOOKS": "true",
    "UPSTREAM_WATCH_POLL_SECONDS": "0.05",
    "UPSTREAM_WATCH_RETRY_SECONDS": "0.05",
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


@pytest.fixture
def two_servers(db_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, LiveServer]]:
    first = LiveServer(db_url, tmp_path, WATCHING).start()
    second = LiveServer(db_url, tmp_path, WATCHING).start()
    yield first, second
    first.stop()
    second.stop()


def test_two_servers_deliver_each_notification_exactly_once(
    two_servers: tuple[LiveServer, LiveServer], receiver: Receiver
) -> None:
    first, second = two_servers
    assert (
        httpx.post(
            f"{first.url}/api/v1/lineage", json=job_run("etl", ["raw"], ["orders"])
        ).status_code
        == 201
    )
    body = {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "direction": "downstream",
        "deliver": {"webhook": {"url": receiver.url, "secret": SECRET}},
    }
    subscription = httpx.post(f"{first.url}/v3/subscriptions", json=body).json()["id"]
    receiver.answers = [500, 500]  # the first notifications are retried, by either process
    readers = 12
    for number in range(readers):
        server = (first, second)[number % 2]
        event = job_run(f"report_{number}", ["orders"], [f"dash_{number}"])
        assert httpx.post(f"{server.url}/api/v1/lineage", json=event).status_code == 201

    deliveries: list[dict[str, object]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        answer = httpx.get(f"{second.url}/v3/subscriptions/{subscription}/deliveries?limit=1000")
        deliveries = answer.json()["deliveries"]
        added = sum(len(json.loads(str(d["body"]))["added"]) for d in deliveries)
        if added == 2 * readers and all(d["state"] == "delivered" for d in deliveries):
            break
        time.sleep(0.1)
    ids = [d["id"] for d in receiver.documents()]
    assert all(d["state"] == "delivered" for d in deliveries)
    delivered = Counter(ids)
    # Two answers were 500: those notifications were received twice, as retries, by design;
    # every other one once, and none that the log does not hold.
    assert set(delivered) == {d["id"] for d in deliveries}
    assert sum(delivered.values()) == len(deliveries) + 2
    attempts = {d["id"]: len(d["attempts"]) for d in deliveries}  # type: ignore[arg-type]
    assert delivered == Counter(attempts)
