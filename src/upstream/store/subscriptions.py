"""The statements of watching lineage (design §4.8): subscriptions, the dispatcher's cursor,
notifications and their delivery attempts.

Exactly-once creation across processes needs no lock held while the dispatcher thinks: it
reads the changes after the cursor on one snapshot, works out the notifications, then, in
one write transaction, claims the round after the cursor *as it read it* (`advance_cursor`,
a compare-and-set on the count of stored rounds, which every round raises even when the
position stays) and stores them. A process that lost the race to another moves nothing,
rolls back and stores nothing. Delivery takes each notification with a lease
(`claim`), a compare-and-set too, so two processes never send one notification at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.visibility import shown_documents

PENDING = "pending"
DELIVERED = "delivered"
DEAD = "dead"
#: A digest subscription's notification waiting for its interval's end.
HELD = "held"
#: A held notification sent within a digest.
DIGESTED = "digested"
_CURSOR = 1


class SubscriptionRow(NamedTuple):
    id: uuid.UUID
    spec: dict[str, Any]
    secret: str
    radius: dict[str, Any]
    created_at: datetime
    #: Raised with every radius stored (`save_radius`).
    version: int = 0


class NotificationRow(NamedTuple):
    id: uuid.UUID
    subscription_id: uuid.UUID
    body: str
    state: str
    tries: int
    created_at: datetime
    next_attempt_at: datetime
    delivered_at: datetime | None


class AttemptRow(NamedTuple):
    notification_id: uuid.UUID
    attempt: int
    at: datetime
    status: int | None
    error: str | None


def add_subscription(conn: Connection, row: SubscriptionRow) -> None:
    conn.execute(t.subscriptions.insert().values(row._asdict()))


def subscriptions(
    conn: Connection,
    ids: Collection[uuid.UUID] | None = None,
    visibility: Visibility = EVERYTHING,
) -> list[SubscriptionRow]:
    """Every subscription (or those of `ids`) whose spec `visibility` may see whole
    (`store.visibility.shown_documents`: what it watches), oldest first."""
    s = t.subscriptions.c
    query = (
        sa.select(s.id, s.spec, s.secret, s.radius, s.created_at, s.version)
        .where(shown_documents(conn, s.spec, visibility))
        .order_by(s.created_at, s.id)
    )
    if ids is not None:
        query = query.where(s.id.in_(list(ids)))
    return [SubscriptionRow(*row) for row in conn.execute(query)]


def specs(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """The spec of each subscription of `ids` (without its radius, which is large)."""
    s = t.subscriptions.c
    found: dict[uuid.UUID, dict[str, Any]] = {}
    for matches in id_filters(conn, s.id, ids):
        found.update(
            (row.id, row.spec) for row in conn.execute(sa.select(s.id, s.spec).where(matches))
        )
    return found


def versions(conn: Connection) -> list[tuple[uuid.UUID, int]]:
    """Each subscription's id and version, oldest first: what a dispatcher that remembers
    radii reads each round instead of the radii themselves."""
    s = t.subscriptions.c
    query = sa.select(s.id, s.version).order_by(s.created_at, s.id)
    return [(id_, int(version)) for id_, version in conn.execute(query)]


def remove_subscription(conn: Connection, subscription: uuid.UUID) -> bool:
    """Delete a subscription with its notifications; False when there was none."""
    n = t.notifications.c
    notes = sa.select(n.id).where(n.subscription_id == subscription)
    conn.execute(
        t.delivery_attempts.delete().where(t.delivery_attempts.c.notification_id.in_(notes))
    )
    conn.execute(t.notifications.delete().where(n.subscription_id == subscription))
    gone = conn.execute(t.subscriptions.delete().where(t.subscriptions.c.id == subscription))
    return gone.rowcount > 0


def save_radii(conn: Connection, radii: Mapping[uuid.UUID, dict[str, Any]]) -> None:
    """Store each subscription's radius of `radii`, raising its version, in one statement
    (a subscription gone meanwhile is left out)."""
    if not radii:
        return
    s = t.subscriptions
    conn.execute(
        s.update()
        .where(s.c.id == sa.bindparam("subscription"))
        .values(radius=sa.bindparam("stored", type_=t.Json), version=s.c.version + 1),
        [{"subscription": id_, "stored": radius} for id_, radius in radii.items()],
    )


class Cursor(NamedTuple):
    """The dispatcher's cursor as a round read it."""

    #: The change-log position turned into notifications.
    position: int
    #: When a round last looked at every subscription (None: no round was stored yet).
    swept_at: datetime | None
    #: How many rounds were stored: what a round claims (`advance_cursor`).
    rounds: int


def cursor(conn: Connection) -> Cursor:
    c = t.watch_cursor.c
    row = conn.execute(sa.select(c.position, c.swept_at, c.rounds).where(c.id == _CURSOR)).first()
    return Cursor(0, None, 0) if row is None else Cursor(int(row[0]), row[1], int(row[2]))


def advance_cursor(conn: Connection, read: Cursor, to: int, swept_at: datetime | None) -> bool:
    """Claim the round after `read` (the cursor this dispatcher read) and move the cursor to
    `to`; False, changing nothing, when another dispatcher stored a round since, even one
    that left the position where it was (a sweep with no write between). `swept_at` None
    keeps the old time."""
    c = t.watch_cursor
    if read.swept_at is None:
        inserted = conn.execute(
            sa.insert(c)
            .from_select(
                ["id", "position", "swept_at", "rounds"],
                sa.select(
                    sa.literal(_CURSOR),
                    sa.literal(to),
                    sa.literal(swept_at, t.Timestamp),
                    sa.literal(1),
                ).where(~sa.exists().where(c.c.id == _CURSOR)),
            )
            .returning(c.c.id)
        )
        return inserted.first() is not None
    values: dict[str, Any] = {"position": to, "rounds": c.c.rounds + 1}
    if swept_at is not None:
        values["swept_at"] = swept_at
    moved = conn.execute(
        c.update()
        .where(c.c.id == _CURSOR, c.c.rounds == read.rounds)
        .values(**values)
        .returning(c.c.id)
    )
    return moved.first() is not None


def notification_row(
    notification: uuid.UUID, subscription: uuid.UUID, body: str, state: str, now: datetime
) -> dict[str, Any]:
    """A new notification's row, to be sent from `now` (or held, for a digest)."""
    return {
        "id": notification,
        "subscription_id": subscription,
        "body": body,
        "state": state,
        "tries": 0,
        "created_at": now,
        "next_attempt_at": now,
        "leased_until": None,
        "delivered_at": None,
    }


def add_notifications(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        conn.execute(t.notifications.insert(), list(rows))


class HeldRow(NamedTuple):
    id: uuid.UUID
    subscription_id: uuid.UUID
    body: str
    created_at: datetime


def held(conn: Connection, created_before: datetime) -> list[HeldRow]:
    """The notifications waiting for a digest, made before `created_before`, oldest first."""
    n = t.notifications.c
    query = (
        sa.select(n.id, n.subscription_id, n.body, n.created_at)
        .where(n.state == HELD, n.created_at < created_before)
        .order_by(n.created_at, n.id)
    )
    return [HeldRow(*row) for row in conn.execute(query)]


def settle_held(conn: Connection, notifications: Collection[uuid.UUID]) -> bool:
    """Mark held `notifications` sent within a digest; False when any of them is no longer
    held (another process made the digest first, or its subscription was deleted)."""
    n = t.notifications
    moved = conn.execute(
        n.update().where(n.c.id.in_(list(notifications)), n.c.state == HELD).values(state=DIGESTED)
    )
    return moved.rowcount == len(notifications)


def due(conn: Connection, now: datetime, limit: int) -> list[uuid.UUID]:
    """Notifications waiting to be sent whose time has come and that nobody holds."""
    n = t.notifications.c
    query = (
        sa.select(n.id)
        .where(
            n.state == PENDING,
            n.next_attempt_at <= now,
            sa.or_(n.leased_until.is_(None), n.leased_until < now),
        )
        .order_by(n.next_attempt_at, n.id)
        .limit(limit)
    )
    return list(conn.execute(query).scalars())


def claim(conn: Connection, notification: uuid.UUID, now: datetime, until: datetime) -> bool:
    """Hold `notification` for sending until `until`; False when another sender holds it,
    or it was sent meanwhile."""
    n = t.notifications
    held = conn.execute(
        n.update()
        .where(
            n.c.id == notification,
            n.c.state == PENDING,
            sa.or_(n.c.leased_until.is_(None), n.c.leased_until < now),
        )
        .values(leased_until=until)
    )
    return held.rowcount == 1


class Outbound(NamedTuple):
    """A held notification with what sending it needs."""

    id: uuid.UUID
    subscription_id: uuid.UUID
    body: str
    tries: int
    spec: dict[str, Any]
    secret: str


def outbound(conn: Connection, notification: uuid.UUID) -> Outbound | None:
    n, s = t.notifications.c, t.subscriptions.c
    row = conn.execute(
        sa.select(n.id, n.subscription_id, n.body, n.tries, s.spec, s.secret)
        .join_from(t.notifications, t.subscriptions, s.id == n.subscription_id)
        .where(n.id == notification)
    ).first()
    return None if row is None else Outbound(*row)


def record_attempt(
    conn: Connection,
    notification: uuid.UUID,
    at: datetime,
    status: int | None,
    error: str | None,
    *,
    state: str,
    tries: int,
    next_attempt_at: datetime,
) -> None:
    """Log one try and set what follows: delivered, dead, or pending until `next_attempt_at`.
    Nothing when the notification is gone (its subscription was deleted meanwhile)."""
    n = t.notifications
    kept = conn.execute(
        n.update()
        .where(n.c.id == notification)
        .values(
            state=state,
            tries=tries,
            next_attempt_at=next_attempt_at,
            leased_until=None,
            delivered_at=at if state == DELIVERED else None,
        )
    )
    if kept.rowcount == 0:
        return
    a = t.delivery_attempts
    number = conn.execute(
        sa.select(sa.func.coalesce(sa.func.max(a.c.attempt), 0)).where(
            a.c.notification_id == notification
        )
    ).scalar_one()
    conn.execute(
        a.insert().values(
            notification_id=notification, attempt=number + 1, at=at, status=status, error=error
        )
    )


def notifications_of(
    conn: Connection,
    subscription: uuid.UUID,
    limit: int,
    offset: int,
    visibility: Visibility = EVERYTHING,
) -> tuple[list[NotificationRow], int]:
    """A page of a subscription's notifications whose body `visibility` may see whole
    (`store.visibility.shown_documents`: a body is kept as it was sent), newest first, and
    how many of them there are."""
    n = t.notifications.c
    shown = sa.and_(n.subscription_id == subscription, shown_documents(conn, n.body, visibility))
    total = conn.execute(sa.select(sa.func.count()).where(shown)).scalar_one()
    rows = conn.execute(
        sa.select(
            n.id,
            n.subscription_id,
            n.body,
            n.state,
            n.tries,
            n.created_at,
            n.next_attempt_at,
            n.delivered_at,
        )
        .where(shown)
        .order_by(n.created_at.desc(), n.id)
        .limit(limit)
        .offset(offset)
    )
    return [NotificationRow(*row) for row in rows], int(total)


def attempts_of(conn: Connection, notifications: Collection[uuid.UUID]) -> list[AttemptRow]:
    a = t.delivery_attempts.c
    found: list[AttemptRow] = []
    for matches in id_filters(conn, a.notification_id, notifications):
        query = sa.select(a.notification_id, a.attempt, a.at, a.status, a.error).where(matches)
        found += [AttemptRow(*row) for row in conn.execute(query.order_by(a.attempt))]
    return found


def requeue(
    conn: Connection, subscription: uuid.UUID, notification: uuid.UUID, now: datetime
) -> bool:
    """Send a notification again, from its first try; False when the subscription has none
    of that id."""
    n = t.notifications
    moved = conn.execute(
        n.update()
        .where(n.c.id == notification, n.c.subscription_id == subscription)
        .values(state=PENDING, tries=0, next_attempt_at=now, leased_until=None)
    )
    return moved.rowcount == 1


def touched_by_runs(conn: Connection, runs: Collection[uuid.UUID]) -> set[str]:
    """The datasets and jobs (ids as text) that runs `runs` read or wrote, or ran as."""
    r = t.relations.c
    touched: set[str] = set()
    for matches in id_filters(conn, r.run_id, runs):
        for dataset, job in conn.execute(
            sa.select(r.dataset_id, r.job_id).where(matches).distinct()
        ):
            touched.update((str(dataset), str(job)))
    ru = t.runs.c
    for matches in id_filters(conn, ru.id, runs):
        touched.update(str(j) for j in conn.execute(sa.select(ru.job_id).where(matches)).scalars())
    return touched


class FailedWrite(NamedTuple):
    run_id: uuid.UUID
    job_id: uuid.UUID
    state: str
    dataset_id: uuid.UUID


def failed_writes(
    conn: Connection, runs: Collection[uuid.UUID], states: Sequence[str]
) -> list[FailedWrite]:
    """Each dataset written by a run of `runs` whose state is one of `states`."""
    ru, r = t.runs.c, t.relations.c
    found: list[FailedWrite] = []
    for matches in id_filters(conn, ru.id, runs):
        query = (
            sa.select(ru.id, ru.job_id, ru.state, r.dataset_id)
            .join_from(t.runs, t.relations, r.run_id == ru.id)
            .where(matches, ru.state.in_(list(states)), r.access == "write")
            .distinct()
        )
        found += [FailedWrite(*row) for row in conn.execute(query)]
    return found
