"""The Kafka sink against the Tansu broker the Kafka tests use: the notification's exact
body on the subscription's topic, keyed by the subscription."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import post
from tests.kafka_support import TansuBroker
from tests.watch.test_notifications import NS, app, job_run
from tests.watch_support import dispatch, immediate_retries
from upstream.store.engine import Store
from upstream.watch.delivery import Deliverer, KafkaSink
from upstream.watch.digest import interval_of

__all__ = ["app"]


def test_a_notification_is_produced_to_the_topic_keyed_by_subscription(
    app: TestClient, store: Store, kafka_broker: TansuBroker
) -> None:
    topic = kafka_broker.create_topic(partitions=2, prefix="changes")
    post(app, job_run("etl", ["raw"], ["orders"]))
    body: dict[str, Any] = {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "direction": "downstream",
        "deliver": {"kafka": {"topic": topic}},
    }
    subscription = app.post("/v3/subscriptions", json=body).json()["id"]
    post(app, job_run("report", ["orders"], ["dash"]))
    dispatch(store)
    deliverer = Deliverer(
        store,
        immediate_retries(),
        timeout=20,
        kafka=lambda: KafkaSink({"bootstrap.servers": kafka_broker.bootstrap}, 20),
    )
    try:
        assert deliverer.deliver_due() == 1
    finally:
        deliverer.close()
    [message] = kafka_broker.read_all(topic, expected=1)
    assert message.key() == subscription.encode()  # type: ignore[attr-defined]
    document = json.loads(message.value())  # type: ignore[attr-defined]
    assert document["subscription"] == subscription
    assert [r["data"] for r in document["added"]] == [f"dataset.{NS}.dash", f"dataset.{NS}.orders"]
    [logged] = app.get(f"/v3/subscriptions/{subscription}/deliveries").json()["deliveries"]
    assert logged["state"] == "delivered"
    assert json.loads(logged["body"]) == document


def test_a_digest_publishes_one_message_per_interval_keyed_by_subscription(
    app: TestClient, store: Store, kafka_broker: TansuBroker
) -> None:
    """A minute's digest: two changes in the first minute are one message, one change in the
    next minute one more, both keyed by the subscription (so on one partition, in order)."""
    topic = kafka_broker.create_topic(partitions=2, prefix="digests")
    post(app, job_run("etl", ["raw"], ["orders"]))
    body: dict[str, Any] = {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "direction": "downstream",
        "changes": ["relation_added"],
        "digest": 60,
        "deliver": {"kafka": {"topic": topic}},
    }
    subscription = app.post("/v3/subscriptions", json=body).json()["id"]
    first = datetime.now(UTC)
    start, end = interval_of(first, 60)
    if end - first < timedelta(seconds=5):
        first = end + timedelta(seconds=1)
        start, end = interval_of(first, 60)
    deliverer = Deliverer(
        store,
        immediate_retries(),
        timeout=20,
        kafka=lambda: KafkaSink({"bootstrap.servers": kafka_broker.bootstrap}, 20),
    )
    try:
        post(app, job_run("report", ["orders"], ["dash"]))
        dispatch(store, now=first)
        post(app, job_run("audit", ["orders"], ["audit"]))
        dispatch(store, now=first + timedelta(seconds=1))
        assert deliverer.deliver_due(lambda: first + timedelta(seconds=2)) == 0  # held
        dispatch(store, now=end)
        assert deliverer.deliver_due(lambda: end) == 1
        post(app, job_run("board", ["orders"], ["board"]))
        dispatch(store, now=end + timedelta(seconds=1))
        dispatch(store, now=end + timedelta(seconds=60))
        assert deliverer.deliver_due(lambda: end + timedelta(seconds=60)) == 1
    finally:
        deliverer.close()
    messages = kafka_broker.read_all(topic, expected=2)
    assert [m.key() for m in messages] == [subscription.encode()] * 2  # type: ignore[attr-defined]
    assert len({m.partition() for m in messages}) == 1  # type: ignore[attr-defined]
    documents = [json.loads(m.value()) for m in messages]  # type: ignore[attr-defined]
    later = end + timedelta(seconds=60)
    assert [d["digest"] for d in documents] == [
        {"from": start.isoformat(), "to": end.isoformat()},
        {"from": end.isoformat(), "to": later.isoformat()},
    ]
    assert [[[r["data"] for r in n["added"]] for n in d["notifications"]] for d in documents] == [
        [
            [f"dataset.{NS}.dash", f"dataset.{NS}.orders"],
            [f"dataset.{NS}.audit", f"dataset.{NS}.orders"],
        ],
        [[f"dataset.{NS}.board", f"dataset.{NS}.orders"]],
    ]
    assert {d["subscription"] for d in documents} == {subscription}


def test_without_brokers_a_kafka_subscription_is_retried_saying_why(
    app: TestClient, store: Store
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    body = {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "deliver": {"kafka": {"topic": "changes"}},
    }
    subscription = app.post("/v3/subscriptions", json=body).json()["id"]
    post(app, job_run("report", ["orders"], ["dash"]))
    dispatch(store)
    deliverer = Deliverer(store, immediate_retries(), timeout=5)
    assert deliverer.deliver_due() == 0
    deliverer.close()
    [logged] = app.get(f"/v3/subscriptions/{subscription}/deliveries").json()["deliveries"]
    assert logged["state"] == "pending"
    assert "kafka_bootstrap_servers" in logged["attempts"][0]["error"]
