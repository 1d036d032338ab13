"""The shapes `/v3/subscriptions` answers with, and the body of a notification, declared
for the OpenAPI document (design §4.8)."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from upstream.query.answers import DataEntry, EntityId, ProgramEntry, RelationEntry


class WatchedDataset(TypedDict):
    namespace: str
    name: str


class FieldRef(TypedDict):
    """A field of a dataset."""

    namespace: str
    name: str
    field: str


class Watch(TypedDict, total=False):
    """One of: a dataset, a field of one, every field carrying a tag, every dataset of a
    namespace."""

    dataset: WatchedDataset
    field: FieldRef
    tag: str
    namespace: str


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
    #: Seconds of the digest's interval; null: each change is sent as it is seen.
    digest: int | None
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
    #: pending, delivered or dead; for a digest, held (until its interval ends) or
    #: digested (sent within one).
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
    #: The UI page of what is watched; null for a namespace.
    watched: str | None


class FieldEdgeEntry(TypedDict):
    source: FieldRef
    target: FieldRef
    #: What stated the edge: lineageFacet, fieldOperations, columnLineage or sql.
    origin: str
    #: The runs whose lineage states the edge within the subscription's activeDays, newest
    #: first (as a relation's runs); none for an edge only declared, and none for a removed
    #: edge (as for a removed relation).
    runs: list[str]


class FieldEdgeChange(TypedDict):
    added: list[FieldEdgeEntry]
    removed: list[FieldEdgeEntry]


class DownstreamField(TypedDict):
    namespace: str
    name: str
    field: str
    #: The least number of field edges from the gone field.
    hops: int


class SchemaBreakEntry(TypedDict):
    #: The field gone from its dataset's schema.
    field: FieldRef
    downstream: list[DownstreamField]


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
    fieldEdges: FieldEdgeChange
    schemaBreaks: list[SchemaBreakEntry]
    data: dict[str, DataEntry]
    programs: dict[str, ProgramEntry]
    links: NotificationLinks


#: A digest's interval: its start and end (ISO 8601, UTC), aligned on the Unix epoch.
DigestSpan = TypedDict("DigestSpan", {"from": str, "to": str})


class WatchDigest(TypedDict):
    """The body a digest subscription receives at the end of each interval with changes:
    the interval's notifications, oldest first, signed as any notification."""

    id: str
    subscription: str
    change: str
    changes: list[str]
    at: str
    digest: DigestSpan
    watch: Watch
    notifications: list[WatchNotification]
