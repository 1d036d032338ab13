"""The subscriptions service behind `/v3/subscriptions` and `upstream watch` (design §4.8):
create (checked, with the radius as it stands as the "before" of the first change), list,
get, delete, the delivery log and redelivery."""

from __future__ import annotations

import secrets
import socket
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidInput, NotFound
from upstream.model.watch import (
    Radius,
    SubscriptionSpec,
    Watched,
    compare,
    parse_subscription,
    private_address,
)
from upstream.query.field_operation_sets import require_field
from upstream.query.lookup import existing_dataset, existing_namespace
from upstream.query.tag_reach import tagged_fields
from upstream.store import subscriptions as rows
from upstream.store.change_log import position
from upstream.watch.observe import Snapshot, observe


def checked_subscription(
    body: Any, *, max_levels: int, allow_private: bool
) -> tuple[SubscriptionSpec, str]:
    """The subscription `body` asks for and its secret (a new one when none is given);
    InvalidInput naming each bad field. A webhook host is resolved here, once, so that a
    host on the server's own network is refused unless `allow_private`."""
    spec, secret = parse_subscription(body, max_levels=max_levels)
    if spec.sink == "webhook" and not allow_private:
        host = urlsplit(spec.target).hostname or ""
        try:
            addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
        except OSError as exc:
            raise InvalidInput.at(
                "deliver.webhook.url", f"host {host!r} cannot be resolved: {exc}"
            ) from None
        private = private_address(sorted(addresses))
        if private is not None:
            raise InvalidInput.at(
                "deliver.webhook.url",
                f"host {host!r} is on a private address ({private}); the server's "
                "allow_private_webhooks setting allows that",
            )
    return spec, secret or secrets.token_urlsafe(32)


def create_subscription(
    conn: Connection, spec: SubscriptionSpec, secret: str, now: datetime
) -> dict[str, Any]:
    """Store the subscription, its radius as it stands now being what later changes are told
    against; the answer is the only one that shows the secret."""
    _require_watched(conn, spec.watch)
    start = Radius(since=position(conn))
    _, radius = compare(start, observe(Snapshot.of(conn, [spec.watch]), spec, start, (), now).seen)
    row = rows.SubscriptionRow(uuid.uuid4(), spec.as_json(), secret, radius.as_json(), now)
    rows.add_subscription(conn, row)
    answer = _shown(row)
    if spec.sink == "webhook":
        answer["deliver"]["webhook"]["secret"] = secret
    return answer


def _require_watched(conn: Connection, watch: Watched) -> None:
    """InvalidInput, naming the field, unless what `watch` names exists."""
    where = f"watch.{watch.kind}"
    try:
        if watch.kind in ("dataset", "field"):
            dataset = existing_dataset(conn, watch.namespace, watch.name)
            if watch.kind == "field":
                where = "watch.field.field"
                require_field(conn, dataset, watch.field)
        elif watch.kind == "tag" and tagged_fields(conn, watch.tag) is None:
            raise NotFound(f"tag {watch.tag!r} not found")
        elif watch.kind == "namespace":
            existing_namespace(conn, watch.namespace)
    except NotFound as exc:
        raise InvalidInput.at(where, str(exc)) from None


def list_subscriptions(conn: Connection, visibility: Visibility = EVERYTHING) -> dict[str, Any]:
    """The subscriptions a reader may see: those whose watch names no namespace
    `visibility` hides (a tag's names none)."""
    return {"subscriptions": [_shown(row) for row in rows.subscriptions(conn, None, visibility)]}


def get_subscription(
    conn: Connection, subscription: str, visibility: Visibility = EVERYTHING
) -> dict[str, Any]:
    return _shown(_row(conn, subscription, visibility))


def delete_subscription(conn: Connection, subscription: str) -> None:
    if not rows.remove_subscription(conn, _id(subscription)):
        raise NotFound(f"subscription {subscription!r} not found")


def deliveries(
    conn: Connection,
    subscription: str,
    limit: int,
    offset: int,
    visibility: Visibility = EVERYTHING,
) -> dict[str, Any]:
    """A page of the subscription's notifications, newest first, each with its state and
    every attempt to deliver it; for a reader limited to some namespaces, only those naming
    none it may not read, counted alone (a body is shown as it was sent, never rewritten)."""
    row = _row(conn, subscription, visibility)
    notes, total = rows.notifications_of(conn, row.id, limit, offset, visibility)
    attempts: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for attempt in rows.attempts_of(conn, [n.id for n in notes]):
        attempts.setdefault(attempt.notification_id, []).append(
            {
                "attempt": attempt.attempt,
                "at": attempt.at.isoformat(),
                "status": attempt.status,
                "error": attempt.error,
            }
        )
    return {
        "deliveries": [
            {
                "id": str(note.id),
                "state": note.state,
                "tries": note.tries,
                "createdAt": note.created_at.isoformat(),
                "nextAttemptAt": note.next_attempt_at.isoformat()
                if note.state == rows.PENDING
                else None,
                "deliveredAt": note.delivered_at.isoformat() if note.delivered_at else None,
                "body": note.body,
                "attempts": attempts.get(note.id, []),
            }
            for note in notes
        ],
        "totalCount": total,
    }


def redeliver(conn: Connection, subscription: str, delivery: str, now: datetime) -> dict[str, Any]:
    """Send a notification again, whatever became of it: pending from its first try."""
    row = _row(conn, subscription)
    if not rows.requeue(conn, row.id, _id(delivery, "delivery"), now):
        raise NotFound(f"delivery {delivery!r} of subscription {subscription!r} not found")
    return {"id": delivery, "state": rows.PENDING}


def _row(
    conn: Connection, subscription: str, visibility: Visibility = EVERYTHING
) -> rows.SubscriptionRow:
    """The subscription, NotFound when missing or hidden from `visibility` (in one words)."""
    found = rows.subscriptions(conn, [_id(subscription)], visibility)
    if not found:
        raise NotFound(f"subscription {subscription!r} not found")
    return found[0]


def _id(text: str, what: str = "subscription") -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise NotFound(f"{what} {text!r} not found") from None


def _shown(row: rows.SubscriptionRow) -> dict[str, Any]:
    return {"id": str(row.id), **row.spec, "createdAt": row.created_at.isoformat()}
