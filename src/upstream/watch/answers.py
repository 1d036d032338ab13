"""The shapes `/v3/subscriptions` answers with, and the body of a notification, declared
for the OpenAPI document (design §4.8)."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from upstream.query.answers import DataEntry, EntityId, ProgramEntry, RelationEntry


class WatchedDataset(TypedDict):
    namespace: str
    name: str


class Watch(TypedDict):
    dataset: WatchedDataset


class Webhook(TypedDict):
    url: str
    #: Only in the answer to the creation.
    secret: NotRequired[str]


class KafkaTopic(TypedDict):
    topic: str


class Deliver(TypedDict, total=False):
    webhook: Webhook
    kafka: KafkaTopic


class Subscription(TypedDict):
    id: str
    watch: Watch
    direction: str
    levels: int
    changes: list[str]
    activeDays: int
    deliver: Deliver
    createdAt: str


class SubscriptionList(TypedDict):
    subscriptions: list[Subscription]


class DeliveryAttempt(TypedDict):
    attempt: int
    at: str
    #: The receiver's HTTP status; null when it gave none (a time-out, a refused connection).
    status: int | None
    error: str | None


class Delivery(TypedDict):
    id: str
    #: pending, delivered or dead.
    state: str
    tries: int
    createdAt: str
    nextAttemptAt: str | None
    deliveredAt: str | None
    #: The exact body sent (and signed).
    body: str
    attempts: list[DeliveryAttempt]


class DeliveryLog(TypedDict):
    deliveries: list[Delivery]
    totalCount: int


class Redelivery(TypedDict):
    id: str
    state: str


class FailedRunEntry(TypedDict):
    runId: str
    state: str
    program: str
    wrote: list[str]


class NotificationLinks(TypedDict):
    watched: str


class WatchNotification(TypedDict):
    """The JSON body a webhook receives (and a Kafka record carries), signed in
    `X-Upstream-Signature: sha256=<hex HMAC-SHA256 of the body with the secret>`."""

    #: The delivery id: the same on every retry and redelivery (an idempotency key).
    id: str
    subscription: str
    #: The most significant kind of `changes`.
    change: str
    changes: list[str]
    at: str
    #: The change-log position the notification includes.
    position: int
    watch: Watch
    direction: str
    levels: int
    added: list[RelationEntry]
    removed: list[RelationEntry]
    deleted: list[EntityId]
    revived: list[EntityId]
    failedRuns: list[FailedRunEntry]
    data: dict[str, DataEntry]
    programs: dict[str, ProgramEntry]
    links: NotificationLinks
