"""`upstream watch`: subscriptions on a server — watch the lineage of a dataset, a field, a
tag or a namespace, list and stop
subscriptions, read a delivery log, redeliver (design §4.8). A server delivers, so these
commands talk to one (`--url`)."""

from __future__ import annotations

import json
from typing import Any

from upstream.commands.target import Target


def subscription_body(
    namespace: str | None,
    dataset: str | None,
    *,
    field: str | None,
    tag: str | None,
    webhook: str | None,
    secret: str | None,
    kafka_topic: str | None,
    direction: str,
    levels: int,
    changes: str | None,
    active_days: int,
    digest: str | None,
) -> dict[str, Any]:
    """The `POST /v3/subscriptions` body the options describe (the server checks it; the
    kinds of change, when not given, are its default for what is watched)."""
    deliver: dict[str, Any] = (
        {"kafka": {"topic": kafka_topic}}
        if kafka_topic is not None
        else {"webhook": {"url": webhook, **({"secret": secret} if secret else {})}}
    )
    body: dict[str, Any] = {
        "watch": watched(namespace, dataset, field, tag),
        "direction": direction,
        "levels": levels,
        "activeDays": active_days,
        "deliver": deliver,
    }
    if changes:
        body["changes"] = [k.strip() for k in changes.split(",") if k.strip()]
    if digest:
        body["digest"] = int(digest) if digest.isdigit() else digest
    return body


def watched(
    namespace: str | None, dataset: str | None, field: str | None, tag: str | None
) -> dict[str, Any]:
    """The `watch` of a subscription: a tag, a field of a dataset, a dataset or a
    namespace, from the most precise of the options given."""
    if tag is not None:
        return {"tag": tag}
    if dataset is None:
        return {"namespace": namespace}
    if field is not None:
        return {"field": {"namespace": namespace, "name": dataset, "field": field}}
    return {"dataset": {"namespace": namespace, "name": dataset}}


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
