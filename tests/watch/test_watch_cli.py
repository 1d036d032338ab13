"""`upstream watch` against a live server: add, list, deliveries, redeliver, stop."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.conftest import LiveServer
from tests.watch.test_notifications import NS, job_run
from tests.watch_support import SECRET, Receiver, receiver_running
from upstream.cli import app

runner = CliRunner()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


@pytest.fixture
def server(tmp_path: Path, sqlite_template: Path) -> Iterator[LiveServer]:
    import shutil

    path = tmp_path / "upstream.db"
    shutil.copy(sqlite_template, path)
    env = {"UPSTREAM_ALLOW_PRIVATE_WEBHOOKS": "true", "UPSTREAM_WATCH_POLL_SECONDS": "0.05"}
    live = LiveServer(f"sqlite:///{path}", tmp_path, env).start()
    yield live
    live.stop()


def upstream(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_watch_from_the_command_line(server: LiveServer, receiver: Receiver) -> None:
    assert (
        httpx.post(
            f"{server.url}/api/v1/lineage", json=job_run("etl", ["raw"], ["orders"])
        ).status_code
        == 201
    )
    added = json.loads(
        upstream(
            "watch",
            "add",
            NS,
            "orders",
            "--webhook",
            receiver.url,
            "--secret",
            SECRET,
            "--direction",
            "downstream",
            "--changes",
            "relation_added",
            "--url",
            server.url,
        )
    )
    subscription = added["id"]
    assert added["changes"] == ["relation_added"]
    assert added["deliver"] == {"webhook": {"url": receiver.url, "secret": SECRET}}
    listed = json.loads(upstream("watch", "list", "--url", server.url))
    assert [s["id"] for s in listed["subscriptions"]] == [subscription]

    event = job_run("report", ["orders"], ["dash"])
    assert httpx.post(f"{server.url}/api/v1/lineage", json=event).status_code == 201
    deadline = time.monotonic() + 60
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.05)
    log = json.loads(upstream("watch", "deliveries", subscription, "--url", server.url))
    [delivery] = log["deliveries"]
    assert delivery["id"] == receiver.documents()[0]["id"]

    said = upstream("watch", "redeliver", subscription, delivery["id"], "--url", server.url)
    assert f"notification {delivery['id']} will be sent again" in said
    while len(receiver.received) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [d["id"] for d in receiver.documents()] == [delivery["id"]] * 2

    assert "stopped subscription" in upstream("watch", "stop", subscription, "--url", server.url)
    assert json.loads(upstream("watch", "list", "--url", server.url)) == {"subscriptions": []}


def test_watch_add_needs_one_destination() -> None:
    result = runner.invoke(app, ["watch", "add", NS, "orders"])
    assert result.exit_code == 2
    assert "--webhook or --kafka-topic" in result.output


def test_a_refused_subscription_names_the_field(server: LiveServer) -> None:
    result = runner.invoke(
        app, ["watch", "add", NS, "nope", "--webhook", "https://example.com/x", "--url", server.url]
    )
    assert result.exit_code != 0
    assert "watch.dataset" in result.output


@pytest.mark.parametrize(
    ("where", "watch"),
    [
        ((NS, "orders", None, None), {"dataset": {"namespace": NS, "name": "orders"}}),
        (
            (NS, "orders", "total", None),
            {"field": {"namespace": NS, "name": "orders", "field": "total"}},
        ),
        ((None, None, None, "PII"), {"tag": "PII"}),
        ((NS, None, None, None), {"namespace": NS}),
    ],
)
def test_the_options_name_what_is_watched(
    where: tuple[str | None, str | None, str | None, str | None], watch: dict[str, object]
) -> None:
    from upstream.commands.watch import subscription_body

    namespace, dataset, field, tag = where
    body = subscription_body(
        namespace,
        dataset,
        field=field,
        tag=tag,
        webhook="https://hooks.example.com/x",
        secret=None,
        kafka_topic=None,
        direction="upstream",
        levels=2,
        changes=None,
        active_days=30,
        digest="3600",
    )
    assert body == {
        "watch": watch,
        "direction": "upstream",
        "levels": 2,
        "activeDays": 30,
        "digest": 3600,  # kinds left to the server's default for the watch
        "deliver": {"webhook": {"url": "https://hooks.example.com/x"}},
    }


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--webhook", "https://h.example.com/x"], "give a namespace (and a dataset) or --tag"),
        ([NS, "--tag", "PII", "--webhook", "https://h.example.com/x"], "or --tag"),
        ([NS, "--field", "total", "--webhook", "https://h.example.com/x"], "needs a dataset"),
    ],
)
def test_what_to_watch_is_checked_before_asking_the_server(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["watch", "add", *args])
    assert result.exit_code == 2
    assert says in " ".join(result.output.split())
