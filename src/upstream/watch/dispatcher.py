"""The dispatcher: follows the change log from its cursor and records, for each subscription
whose radius a write touched, one notification of what changed (design §4.8).

It reads on one snapshot — the changes after the cursor, each touched subscription's radius
before (stored) and after (the graph index at that snapshot) — and then stores the
notifications and the new radii in the transaction that moves the cursor from where it read
(`upstream.store.subscriptions.advance_cursor`). So every committed change is looked at
once, by one process, and a notification is created exactly once. A write never waits for
any of this: it only appended to the change log, as every write does.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from upstream.model.watch import FAILED_STATES, Radius, RadiusChange, SubscriptionSpec, compare
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.watch_fields import Schemas
from upstream.query.watch_radius import entities_named, shown_relations, watched_datasets
from upstream.store import change_log
from upstream.store import subscriptions as rows
from upstream.store.engine import Store
from upstream.watch.observe import observe
from upstream.watch.payload import Links, notification_body


@dataclass(frozen=True)
class Touched:
    """What the changes since the cursor touched: entity ids as text, failed runs' writes,
    or everything (a reload, a trimmed log, a sweep)."""

    ids: frozenset[str]
    failed: tuple[rows.FailedWrite, ...]
    everything: bool
    #: The newest position each run changed at.
    run_positions: dict[uuid.UUID, int]


@dataclass(frozen=True)
class Round:
    """What one dispatch round found, to be stored if the cursor is still where it read."""

    read: int
    to: int
    had_cursor: bool
    swept_at: datetime | None
    radii: dict[uuid.UUID, dict[str, Any]]
    notifications: list[dict[str, Any]]


def dispatch_once(
    store: Store, links: Links, sweep_every: timedelta, now: datetime | None = None
) -> int:
    """One round: the notifications for every change committed since the cursor; how many
    it stored (0 also when another process handled these changes first)."""
    at = now or datetime.now(UTC)
    with store.read() as conn:
        found = _round(conn, links, sweep_every, at)
    if found is None:
        return 0
    return store.write(lambda conn: _store(conn, found))


def _round(conn: Connection, links: Links, sweep_every: timedelta, now: datetime) -> Round | None:
    read, swept = rows.cursor(conn)
    had_cursor = swept is not None
    newest = change_log.position(conn)
    sweep = swept is None or now - swept >= sweep_every
    if newest == read and not sweep:
        return None
    subscriptions = rows.subscriptions(conn)
    if not subscriptions:
        # Nothing to tell anyone: the cursor moves on (when the log did), so a first
        # subscription starts from its own time.
        return None if newest == read else Round(read, newest, had_cursor, now, {}, [])
    touched = _touched(conn, read, sweep)
    radii: dict[uuid.UUID, dict[str, Any]] = {}
    notes: list[dict[str, Any]] = []
    schemas = Schemas(conn)
    for subscription in subscriptions:
        spec = SubscriptionSpec.from_json(subscription.spec)
        before = Radius.from_json(subscription.radius)
        if not touched.everything and not _may_change(conn, spec, before, touched.ids):
            continue
        news = [w for w in touched.failed if touched.run_positions[w.run_id] > before.since]
        seen = observe(conn, spec, before, news, now, schemas)
        change, remembered = compare(before, seen.seen)
        if remembered != before:
            radii[subscription.id] = remembered.as_json()
        kinds = change.kinds(spec.changes)
        if kinds:
            notes.append(
                _notification(
                    conn, subscription.id, spec, change, kinds, seen.shown, links, newest, now
                )
            )
    return Round(read, newest, had_cursor, now if sweep else None, radii, notes)


def _touched(conn: Connection, read: int, sweep: bool) -> Touched:
    try:
        changes = change_log.changes_since(conn, read)
    except change_log.ChangeLogGap:
        return Touched(frozenset(), (), everything=True, run_positions={})
    run_positions = {i: c.position for c in changes if c.kind == change_log.RUNS for i in c.ids}
    runs = set(run_positions)
    named = {str(i) for c in changes if c.kind != change_log.RUNS for i in c.ids}
    reload = any(c.kind == change_log.RELOAD for c in changes)
    ids = frozenset(named | rows.touched_by_runs(conn, runs))
    failed = tuple(rows.failed_writes(conn, runs, FAILED_STATES))
    return Touched(ids, failed, everything=sweep or reload, run_positions=run_positions)


def _may_change(
    conn: Connection, spec: SubscriptionSpec, before: Radius, touched: frozenset[str]
) -> bool:
    """Whether the changes that touched `touched` may change the subscription's radius: one
    of its entities, or a watched dataset, changed. A tag or a namespace may gain fields or
    datasets with any change, so it is looked at whenever something changed."""
    if spec.watch.kind in ("tag", "namespace"):
        return bool(touched)
    seeds = {str(s) for s in watched_datasets(conn, spec.watch)}
    return not touched.isdisjoint(before.entities | seeds)


def _notification(
    conn: Connection,
    subscription: uuid.UUID,
    spec: SubscriptionSpec,
    change: RadiusChange,
    kinds: list[str],
    shown: list[ShownRelation],
    links: Links,
    position: int,
    now: datetime,
) -> dict[str, Any]:
    """The notification row: its id, and its body written once, so every delivery of it
    (and its signature) is the same bytes."""
    added = (
        [r for r in shown if (r.dataset_id, r.job_id, r.access) in change.added]
        if "relation_added" in kinds
        else []
    )
    removed = (
        [ShownRelation(r.dataset_id, r.job_id, None, r.access, "") for r in sorted(change.removed)]
        if "relation_removed" in kinds
        else []
    )
    added_entries, data, programs = shown_relations(conn, spec, added, now)
    removed_entries, removed_data, removed_programs = shown_relations(conn, spec, removed, now)
    entities = set(change.deleted) | set(change.revived) | {f.job_id for f in change.failed}
    entities |= {d for f in change.failed for d in f.wrote}
    for edge in change.field_added | change.field_removed:
        entities |= {edge.source_dataset, edge.target_dataset}
    for broken in change.breaks:
        entities |= {broken.dataset_id, *(d for d, _, _ in broken.downstream)}
    named = entities_named(conn, entities)
    notification = uuid.uuid4()
    body = notification_body(
        notification_id=notification,
        subscription=subscription,
        spec=spec,
        kinds=kinds,
        at=now,
        position=position,
        added=added_entries,
        removed=removed_entries,
        data={**removed_data, **data},
        programs={**removed_programs, **programs},
        change=change,
        named=named,
        links=links,
    )
    # A digest's notifications wait to be sent together at its interval's end.
    state = rows.HELD if spec.digest else rows.PENDING
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return rows.notification_row(notification, subscription, text, state, now)


def _store(conn: Connection, found: Round) -> int:
    if not rows.advance_cursor(
        conn, found.read, found.to, found.swept_at, had_row=found.had_cursor
    ):
        return 0
    living = {
        s.id
        for s in rows.subscriptions(
            conn, found.radii.keys() | {n["subscription_id"] for n in found.notifications}
        )
    }
    for subscription, radius in found.radii.items():
        rows.save_radius(conn, subscription, radius)
    notes = [n for n in found.notifications if n["subscription_id"] in living]
    rows.add_notifications(conn, notes)
    return len(notes)
