"""The dispatcher: follows the change log from its cursor and records, for each subscription
whose radius a write touched, one notification of what changed (design §4.8).

It reads on one snapshot — the changes after the cursor, each touched subscription's radius
before (stored) and after (the graph index at that snapshot) — and then stores the
notifications and the new radii in the transaction that claims the round after the cursor as
it read it (`upstream.store.subscriptions.advance_cursor`). So every committed change, and
every sweep, is looked at once, by one process, and a notification is created exactly once.
A write never waits for any of this: it only appended to the change log, as every write does.

It shares its process with ingest, so a round costs what the changes touched: what it
parsed and read before is remembered (`upstream.watch.memory`), and only the subscriptions
whose radius or watched datasets the changes touched are walked again.
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
    FieldEdgeKey,
    Radius,
    RadiusChange,
    SubscriptionSpec,
    compare,
)
from upstream.query.answers import EntityId
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.graph_index.index import graph_of
from upstream.query.run_order import newest_first
from upstream.query.watch_fields import stating_runs
from upstream.query.watch_radius import (
    entities_named,
    shown_relations,
    window_of,
)
from upstream.store import change_log
from upstream.store import subscriptions as rows
from upstream.store.engine import Store
from upstream.watch.memory import Remembered, SchemaMemory, SubscriptionMemory
from upstream.watch.observe import Observation, Snapshot, observe
from upstream.watch.payload import Links, notification_body


@dataclass(frozen=True)
class Touched:
    """What the changes since the cursor touched: entity ids as text, failed runs' writes,
    or everything (a reload, a trimmed log)."""

    ids: frozenset[str]
    #: The datasets and jobs whose own row changed (None: unknown, after a reload or a gap).
    rows_changed: frozenset[str] | None
    failed: tuple[rows.FailedWrite, ...]
    #: The newest position each run changed at.
    run_positions: dict[uuid.UUID, int]

    @property
    def everything(self) -> bool:
        return self.rows_changed is None


@dataclass(frozen=True)
class Round:
    """What one dispatch round found, to be stored if the cursor is still where it read."""

    read: rows.Cursor
    to: int
    swept_at: datetime | None
    #: The radii that changed, and each as stored (made here, outside the write: on SQLite
    #: the write holds the one write lock ingest needs too).
    radii: dict[uuid.UUID, Radius]
    stored: dict[uuid.UUID, dict[str, Any]]
    notifications: list[dict[str, Any]]
    #: The datasets each subscription looked at watched (ids as text).
    seeds: dict[uuid.UUID, frozenset[str]]


class Dispatcher:
    """The dispatcher of one process. Its rounds (`dispatch_once`) remember what they parsed
    (`upstream.watch.memory`): a round parses only the subscriptions another process
    changed, and looks only at those whose radius or watched datasets the changes touched."""

    def __init__(self, store: Store, links: Links, sweep_every: timedelta) -> None:
        self.store = store
        self.links = links
        self.sweep_every = sweep_every
        self.subscriptions = SubscriptionMemory()
        self.schemas = SchemaMemory()

    def dispatch_once(self, now: datetime | None = None) -> int:
        """One round: the notifications for every change committed since the cursor; how
        many it stored (0 also when another process handled these changes first)."""
        at = now or datetime.now(UTC)
        with self.store.read() as conn:
            found = self._round(conn, at)
        return 0 if found is None else self.keep(found)

    def keep(self, found: Round) -> int:
        """Store what a round found on a snapshot, and remember it; how many notifications
        (0 also when another process moved the cursor first)."""
        made, versions = self.store.write(lambda conn: _store(conn, found))
        if versions is not None:
            for subscription, seeds in found.seeds.items():
                self.subscriptions.seen(subscription, seeds)
            for subscription, version in versions.items():
                self.subscriptions.stored(subscription, version, found.radii[subscription])
        return made

    def _round(self, conn: Connection, now: datetime) -> Round | None:
        cursor = rows.cursor(conn)
        read, swept = cursor.position, cursor.swept_at
        newest = change_log.position(conn)
        sweep = swept is None or now - swept >= self.sweep_every
        # Read even when nothing changed: a new subscription is parsed while nothing is
        # written, rather than in the round a burst of writes asks for.
        subscriptions = self.subscriptions.refresh(conn)
        if newest == read and not sweep:
            return None
        if not subscriptions:
            # Nothing to tell anyone. The cursor moves on (when the log did) only when a sweep
            # is due, not at every round of continuous writes: a first subscription's first
            # round then reads at most a sweep interval of changes, of which those before it
            # tell nothing (its radius at its creation is what they are told against).
            return Round(cursor, newest, now, {}, {}, [], {}) if sweep and newest != read else None
        touched = _touched(conn, read)
        schemas = self.schemas.at(conn, read, newest, touched.rows_changed)
        looked_at = (
            subscriptions
            if sweep or touched.everything
            else self.subscriptions.concerned(touched.ids)
        )
        swept_at = now if sweep else None
        if not looked_at:
            return Round(cursor, newest, swept_at, {}, {}, [], {})
        snapshot = Snapshot.of(conn, [held.spec.watch for held in looked_at], schemas)
        radii: dict[uuid.UUID, Radius] = {}
        told: list[tuple[Remembered, RadiusChange, list[str], Observation]] = []
        seeds: dict[uuid.UUID, frozenset[str]] = {}
        for held in looked_at:
            spec, before = held.spec, held.radius
            news = [w for w in touched.failed if touched.run_positions[w.run_id] > before.since]
            observation = observe(snapshot, spec, before, news, now)
            change, remembered = compare(before, observation.seen)
            seeds[held.id] = observation.seen.seeds
            if remembered != before:
                radii[held.id] = remembered
            kinds = change.kinds(spec.changes)
            if kinds:
                told.append((held, change, kinds, observation))
        # The datasets and jobs every notification names, read at once.
        named = entities_named(conn, set().union(*(_named_in(change) for _, change, _, _ in told)))
        notes = [
            _notification(
                conn, held.id, held.spec, change, kinds, observation, named, self.links, newest, now
            )
            for held, change, kinds, observation in told
        ]
        stored = {subscription: radius.as_json() for subscription, radius in radii.items()}
        return Round(cursor, newest, swept_at, radii, stored, notes, seeds)


def _touched(conn: Connection, read: int) -> Touched:
    try:
        changes = change_log.changes_since(conn, read)
    except change_log.ChangeLogGap:
        return Touched(frozenset(), None, (), run_positions={})
    run_positions = {i: c.position for c in changes if c.kind == change_log.RUNS for i in c.ids}
    runs = set(run_positions)
    named = {str(i) for c in changes if c.kind != change_log.RUNS for i in c.ids}
    reload = any(c.kind == change_log.RELOAD for c in changes)
    ids = frozenset(named | rows.touched_by_runs(conn, runs))
    failed = tuple(rows.failed_writes(conn, runs, FAILED_STATES))
    entities = frozenset(str(i) for c in changes if c.kind == change_log.ENTITIES for i in c.ids)
    return Touched(ids, None if reload else entities, failed, run_positions=run_positions)


def _notification(
    conn: Connection,
    subscription: uuid.UUID,
    spec: SubscriptionSpec,
    change: RadiusChange,
    kinds: list[str],
    observation: Observation,
    named: dict[str, tuple[str, EntityId]],
    links: Links,
    position: int,
    now: datetime,
) -> dict[str, Any]:
    """The notification row: its id, and its body written once, so every delivery of it
    (and its signature) is the same bytes. `named` holds the key and identity of (at
    least) the datasets and jobs `_named_in(change)`."""
    added = observation.shown(change.added) if "relation_added" in kinds else []
    removed = (
        [ShownRelation(r.dataset_id, r.job_id, None, r.access, "") for r in sorted(change.removed)]
        if "relation_removed" in kinds
        else []
    )
    added_entries, data, programs = shown_relations(conn, spec, added, now)
    removed_entries, removed_data, removed_programs = shown_relations(conn, spec, removed, now)
    edge_runs = (
        _edge_runs(conn, spec, change.field_added, now) if "field_edges_changed" in kinds else {}
    )
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
        edge_runs=edge_runs,
    )
    # A digest's notifications wait to be sent together at its interval's end.
    state = rows.HELD if spec.digest else rows.PENDING
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return rows.notification_row(notification, subscription, text, state, now)


def _named_in(change: RadiusChange) -> set[str]:
    """The datasets and jobs a notification of `change` names beside its relations."""
    entities = set(change.deleted) | set(change.revived) | {f.job_id for f in change.failed}
    entities |= {d for f in change.failed for d in f.wrote}
    for edge in change.field_added | change.field_removed:
        entities |= {edge.source_dataset, edge.target_dataset}
    for broken in change.breaks:
        entities |= {broken.dataset_id, *(d for d, _, _ in broken.downstream)}
    return entities


def _edge_runs(
    conn: Connection, spec: SubscriptionSpec, added: frozenset[FieldEdgeKey], now: datetime
) -> dict[FieldEdgeKey, list[str]]:
    """The runs that state each added field edge in the subscription's window, newest first
    (as a relation's runs are listed)."""
    stated = stating_runs(graph_of(conn), added, window_of(spec, now))
    order = newest_first(conn, {run for runs in stated.values() for run in runs})
    return {key: sorted(runs, key=order) for key, runs in stated.items()}


def _store(conn: Connection, found: Round) -> tuple[int, dict[uuid.UUID, int] | None]:
    """Move the cursor and store what the round found: how many notifications, and the
    version each changed radius was stored as (None: another process moved the cursor
    first, and nothing was stored)."""
    if not rows.advance_cursor(conn, found.read, found.to, found.swept_at):
        return 0, None
    rows.save_radii(conn, found.stored)
    living = dict(rows.versions(conn))
    versions = {
        subscription: living[subscription] for subscription in found.stored.keys() & living.keys()
    }
    notes = [n for n in found.notifications if n["subscription_id"] in living]
    rows.add_notifications(conn, notes)
    return len(notes), versions
