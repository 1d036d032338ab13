"""`/v3/subscriptions`: subscriptions that tell a team when its lineage changes, their
delivery log and redelivery (design §4.8). Changes need a `write` token, as every non-GET
route does, that may read every namespace (`api.scoped.EveryNamespace`); a reader limited
to some namespaces is shown the subscriptions and notifications naming only those."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from upstream.api.body import read_json
from upstream.api.deps import SettingsDep, StoreDep, VisibilityDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.scoped import EveryNamespace
from upstream.api.services import change, read
from upstream.ingest.body import Limits
from upstream.model.errors import Forbidden, InvalidInput, NotFound
from upstream.watch import subscriptions as service
from upstream.watch.answers import (
    DeliveryLog,
    Redelivery,
    Subscription,
    SubscriptionList,
    WatchDigest,
    WatchNotification,
)

router = APIRouter(tags=["subscriptions"])
#: What a subscription's webhook receives, documented under the OpenAPI `webhooks`.
webhooks = APIRouter(tags=["subscriptions"])

_BODY = {
    "requestBody": {
        "required": True,
        "description": 'What to watch, how far, which changes, where to deliver: {"watch": '
        '{"dataset": {"namespace", "name"}} or {"field": {"namespace", "name", "field"}} or '
        '{"tag": "PII"} or {"namespace": "…"}, "direction": "downstream", "levels": 3, '
        '"changes": [...], "activeDays": 30, "digest": "PT1H" (or seconds; optional), '
        '"deliver": {"webhook": {"url", "secret"}} or {"kafka": {"topic"}}}',
        "content": {"application/json": {"schema": {"type": "object"}}},
    },
}


@router.post(
    "/v3/subscriptions",
    status_code=201,
    summary="Watch the lineage of a dataset, a field, a tag or a namespace: be told when it "
    "changes, on a webhook or Kafka",
    response_model=None,
    responses={
        201: {"model": Subscription},
        **documented(InvalidInput, Forbidden),
    },
    openapi_extra=_BODY,
    dependencies=[EveryNamespace],
)
async def post_subscription(
    request: Request, store: StoreDep, settings: SettingsDep, response: Response
) -> dict[str, object]:
    """Check the subscription (what it watches must exist, a webhook must be a public
    http(s) URL), store it, and answer with it and its secret, shown only here."""
    limits = Limits(settings.max_body_bytes, max_events=None, max_values=settings.max_event_values)
    body = await read_json(request, limits)
    spec, secret = await run_in_threadpool(
        service.checked_subscription,
        body.document,
        max_levels=settings.max_levels,
        allow_private=settings.allow_private_webhooks,
    )
    return await run_in_threadpool(
        change, store, response, service.create_subscription, spec, secret
    )


@router.get(
    "/v3/subscriptions",
    summary="List subscriptions",
    response_model=None,
    responses={200: {"model": SubscriptionList}},
)
def get_subscriptions(store: StoreDep, visibility: VisibilityDep) -> JsonAnswer[dict[str, object]]:
    return read(store, service.list_subscriptions, visibility)


@router.get(
    "/v3/subscriptions/{subscription}",
    summary="Show a subscription",
    response_model=None,
    responses={200: {"model": Subscription}, **documented(NotFound)},
)
def get_subscription(
    subscription: str, store: StoreDep, visibility: VisibilityDep
) -> JsonAnswer[dict[str, object]]:
    return read(store, service.get_subscription, subscription, visibility)


@router.delete(
    "/v3/subscriptions/{subscription}",
    status_code=204,
    response_class=Response,
    summary="Stop a subscription (its undelivered notifications are dropped)",
    responses=documented(NotFound, Forbidden),
    dependencies=[EveryNamespace],
)
def delete_subscription(subscription: str, store: StoreDep) -> Response:
    store.write(lambda conn: service.delete_subscription(conn, subscription))
    return Response(status_code=204)


@router.get(
    "/v3/subscriptions/{subscription}/deliveries",
    summary="A subscription's notifications, newest first, with every delivery attempt",
    response_model=None,
    responses={200: {"model": DeliveryLog}, **documented(NotFound)},
)
def get_deliveries(
    subscription: str,
    store: StoreDep,
    visibility: VisibilityDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Notifications to return.")] = 50,
    offset: Annotated[int, Query(ge=0, description="Notifications to skip.")] = 0,
) -> JsonAnswer[dict[str, object]]:
    return read(store, service.deliveries, subscription, limit, offset, visibility)


@router.post(
    "/v3/subscriptions/{subscription}/deliveries/{delivery}/redeliver",
    status_code=202,
    summary="Send a notification again (a dead one too), from its first try",
    response_model=None,
    responses={202: {"model": Redelivery}, **documented(NotFound, Forbidden)},
    dependencies=[EveryNamespace],
)
def post_redeliver(
    subscription: str, delivery: str, store: StoreDep, response: Response
) -> Redelivery:
    answer = change(store, response, service.redeliver, subscription, delivery)
    return Redelivery(id=answer["id"], state=answer["state"])


@webhooks.post(
    "lineage-changed",
    summary="A change of a watched lineage, posted to a subscription's webhook",
    description="Signed in X-Upstream-Signature: sha256=<hex HMAC-SHA256 of the exact body "
    "with the subscription's secret>. Answer 2xx; anything else is retried (5xx, 408, 429, "
    "no answer) or ends the delivery (other answers). The same `id` on every retry.",
)
def lineage_changed(body: WatchNotification) -> None:
    """Documentation only: the server sends this, it does not serve it."""


@webhooks.post(
    "lineage-digest",
    summary="The changes of one interval of a digest subscription, posted as one",
    description="Sent when the interval ends, signed and retried as every notification.",
)
def lineage_digest(body: WatchDigest) -> None:
    """Documentation only: the server sends this, it does not serve it."""
