"""Digests (design §4.8): a subscription with a `digest` interval has its notifications
held as the dispatcher makes them, and sent together as one notification when the
interval they fall in ends. Intervals are aligned on the Unix epoch (an hourly digest covers
10:00 to 11:00 UTC), so every process agrees on them.

A digest is made in one write transaction that marks its held notifications digested only
if each is still held: a second process that made the same digest finds them taken and
rolls back, so each digest exists once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from upstream.model.watch import CHANGE_KINDS, SubscriptionSpec
from upstream.store import subscriptions as rows
from upstream.store.engine import Store


@dataclass(frozen=True)
class Digest:
    subscription: uuid.UUID
    start: datetime
    end: datetime
    held: tuple[rows.HeldRow, ...]


class _Taken(Exception):
    """Another process made one of these digests first."""


def interval_of(at: datetime, seconds: int) -> tuple[datetime, datetime]:
    """The digest interval `at` falls in: [start, end), aligned on the epoch."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    start = epoch + timedelta(seconds=(int((at - epoch).total_seconds()) // seconds) * seconds)
    return start, start + timedelta(seconds=seconds)


def due_digests(conn: Connection, now: datetime) -> list[Digest]:
    """The digests whose interval has ended, with the notifications each holds. Only the
    subscriptions holding notifications are read: a round with none reads no subscription."""
    held = rows.held(conn, now)
    specs = {
        id_: SubscriptionSpec.from_json(spec).digest
        for id_, spec in rows.specs(conn, {note.subscription_id for note in held}).items()
    }
    grouped: dict[tuple[uuid.UUID, datetime, datetime], list[rows.HeldRow]] = {}
    for note in held:
        seconds = specs.get(note.subscription_id)
        if seconds is None:
            continue
        start, end = interval_of(note.created_at, seconds)
        if end <= now:
            grouped.setdefault((note.subscription_id, start, end), []).append(note)
    return [Digest(*key, tuple(held)) for key, held in sorted(grouped.items())]


def digest_body(digest: Digest, notification: uuid.UUID, now: datetime) -> dict[str, Any]:
    """`{"id", "subscription", "change", "changes", "at", "digest": {"from", "to"},
    "notifications": [...]}`: the held notifications' bodies, oldest first, and every kind
    they carry."""
    items = [json.loads(note.body) for note in digest.held]
    carried = {kind for item in items for kind in item["changes"]}
    kinds = [kind for kind in CHANGE_KINDS if kind in carried]
    return {
        "id": str(notification),
        "subscription": str(digest.subscription),
        "change": kinds[0],
        "changes": kinds,
        "at": now.isoformat(),
        "digest": {"from": digest.start.isoformat(), "to": digest.end.isoformat()},
        "watch": items[0]["watch"],
        "notifications": items,
    }


def digest_once(store: Store, now: datetime | None = None) -> int:
    """Send every digest whose interval has ended; how many were made (0 also when another
    process made them first)."""
    at = now or datetime.now(UTC)
    with store.read() as conn:
        digests = due_digests(conn, at)
    if not digests:
        return 0
    try:
        return store.write(lambda conn: _store(conn, digests, at))
    except _Taken:
        return 0


def _store(conn: Connection, digests: Sequence[Digest], now: datetime) -> int:
    for digest in digests:
        if not rows.settle_held(conn, [note.id for note in digest.held]):
            raise _Taken
        notification = uuid.uuid4()
        body = json.dumps(
            digest_body(digest, notification, now), sort_keys=True, separators=(",", ":")
        )
        row = rows.notification_row(notification, digest.subscription, body, rows.PENDING, now)
        rows.add_notifications(conn, [row])
    return len(digests)
