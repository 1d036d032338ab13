"""The Kafka sink against the Tansu broker the Kafka tests use: the notification's exact
body on the subscription's topic, keyed by the subscription."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import post
from tests.kafka_support import TansuBroker
from tests.watch.test_notifications import NS, app, job_run
from tests.watch_support import dispatch, immediate_retries
from upstream.store.engine import Store
from upstream.watch.delivery import Deliverer, KafkaSink

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
