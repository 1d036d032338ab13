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

from upstream.model.watch import (
    FAILED_STATES,
    FailedRun,
    Radius,
    RadiusChange,
    SubscriptionSpec,
    compare,
)
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.watch_radius import (
    entities_named,
    radius_of,
    radius_walk,
    shown_relations,
    watched_dataset,
)
from upstream.store import change_log
from upstream.store import subscriptions as rows
from upstream.store.engine import Store
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
    for subscription in subscriptions:
        spec = SubscriptionSpec.from_json(subscription.spec)
        before = Radius.from_json(subscription.radius)
        seed = watched_dataset(conn, spec)
        if not touched.everything and touched.ids.isdisjoint(
            before.nodes | before.deleted | {str(seed)}
        ):
            continue
        shown = radius_walk(conn, spec, seed, now)
        after = radius_of(shown)
        watched = before.nodes | before.deleted | {str(seed)} | {n for r in after for n in r[:2]}
        deleted_now = rows.deleted_among(conn, watched)
        news = [w for w in touched.failed if touched.run_positions[w.run_id] > before.since]
        failed = _failed_runs(news, after | before.relations, str(seed))
        change, remembered = compare(before, after, str(seed), deleted_now, failed)
        if remembered != before:
            radii[subscription.id] = remembered.as_json()
        kinds = change.kinds(spec.changes)
        if kinds:
            notes.append(
                _notification(
                    conn, subscription.id, spec, seed, change, kinds, shown, links, newest, now
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


def _failed_runs(
    writes: list[rows.FailedWrite], relations: frozenset[Any], seed: str
) -> list[FailedRun]:
    """The failed runs that wrote a dataset of the radius, as a job of the radius."""
    datasets = {r.dataset_id for r in relations} | {seed}
    jobs = {r.job_id for r in relations}
    wrote: dict[str, tuple[str, str, set[str]]] = {}
    for write in writes:
        if str(write.dataset_id) in datasets and str(write.job_id) in jobs:
            entry = wrote.setdefault(str(write.run_id), (str(write.job_id), write.state, set()))
            entry[2].add(str(write.dataset_id))
    return [
        FailedRun(run, job, state, tuple(sorted(datasets_written)))
        for run, (job, state, datasets_written) in sorted(wrote.items())
    ]


def _notification(
    conn: Connection,
    subscription: uuid.UUID,
    spec: SubscriptionSpec,
    seed: uuid.UUID,
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
    added_entries, data, programs = shown_relations(conn, spec, seed, added, now)
    removed_entries, removed_data, removed_programs = shown_relations(
        conn, spec, seed, removed, now
    )
    entities = set(change.deleted) | set(change.revived) | {f.job_id for f in change.failed}
    entities |= {d for f in change.failed for d in f.wrote}
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
    return {
        "id": notification,
        "subscription_id": subscription,
        "body": json.dumps(body, sort_keys=True, separators=(",", ":")),
        "state": rows.PENDING,
        "tries": 0,
        "created_at": now,
        "next_attempt_at": now,
        "leased_until": None,
        "delivered_at": None,
    }


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
