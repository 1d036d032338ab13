"""`upstream watch`: subscriptions on a server — watch a dataset's lineage, list and stop
subscriptions, read a delivery log, redeliver (design §4.8). A server delivers, so these
commands talk to one (`--url`)."""

from __future__ import annotations

import json
from typing import Any

from upstream.commands.target import Target
from upstream.model.watch import CHANGE_KINDS


def subscription_body(
    namespace: str,
    dataset: str,
    *,
    webhook: str | None,
    secret: str | None,
    kafka_topic: str | None,
    direction: str,
    levels: int,
    changes: str | None,
    active_days: int,
) -> dict[str, Any]:
    """The `POST /v3/subscriptions` body the options describe (the server checks it)."""
    deliver: dict[str, Any] = (
        {"kafka": {"topic": kafka_topic}}
        if kafka_topic is not None
        else {"webhook": {"url": webhook, **({"secret": secret} if secret else {})}}
    )
    kinds = [k.strip() for k in changes.split(",") if k.strip()] if changes else list(CHANGE_KINDS)
    return {
        "watch": {"dataset": {"namespace": namespace, "name": dataset}},
        "direction": direction,
        "levels": levels,
        "changes": kinds,
        "activeDays": active_days,
        "deliver": deliver,
    }


def watch(target: Target, body: dict[str, Any]) -> str:
    with target.client() as client:
        return _shown(client.subscribe(body))


def list_subscriptions(target: Target) -> str:
    with target.client() as client:
        return _shown(client.subscriptions())


def stop(target: Target, subscription: str) -> str:
    with target.client() as client:
        client.unsubscribe(subscription)
    return f"stopped subscription {subscription}; its undelivered notifications are dropped"


def deliveries(target: Target, subscription: str) -> str:
    with target.client() as client:
        return _shown(client.deliveries(subscription))


def redeliver(target: Target, subscription: str, delivery: str) -> str:
    with target.client() as client:
        client.redeliver(subscription, delivery)
    return f"notification {delivery} will be sent again"


def _shown(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)
