"""What a dispatcher remembers between its rounds (design §4.8), so a round costs what the
changes since the last one touched rather than what every subscription holds.

- Each subscription parsed once per stored version: its spec and its radius, which the
  store hands out as JSON. A round reads only the ids and versions, and parses again only a
  subscription that is new or whose radius another process stored since.
- The subscriptions by the entities their radius holds (and the datasets they watch), so
  the datasets and jobs a change touched find the subscriptions it may concern without a
  look at the others. A tag or a namespace watch may gain fields or datasets with any
  change: it is concerned by every change.
- The datasets' schema fields until a change names the dataset (a dataset row whose content
  changes is always named in the change log), valid only for the position they were read at.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property

from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.model.watch import Radius, SchemaField, SubscriptionSpec
from upstream.query.watch_fields import Schemas
from upstream.query.watch_radius import aliases_of, watched_datasets
from upstream.store import subscriptions as rows


@dataclass(frozen=True)
class Remembered:
    """A subscription as its stored `version` holds it, parsed."""

    id: uuid.UUID
    version: int
    spec: SubscriptionSpec
    radius: Radius
    #: The datasets it watched when last looked at (ids as text).
    seeds: frozenset[str]

    @property
    def everywhere(self) -> bool:
        """Any change may concern it (a tag or a namespace watch)."""
        return self.spec.watch.kind in ("tag", "namespace")

    @cached_property
    def entities(self) -> frozenset[str]:
        """The datasets and jobs a change to which may change its radius (ids as text): its
        radius's, the datasets it watched, and the watched dataset's own id, which a change
        to its alias group names."""
        watch = self.spec.watch
        own = {str(DatasetRef(watch.namespace, watch.name).id)} if watch.name else set()
        return self.radius.entities | self.seeds | own


class SubscriptionMemory:
    """The subscriptions of one dispatcher, by id and by the entities they may change with."""

    def __init__(self) -> None:
        self._held: dict[uuid.UUID, Remembered] = {}
        self._order: list[uuid.UUID] = []
        self._by_entity: dict[str, set[uuid.UUID]] = {}

    def refresh(self, conn: Connection) -> list[Remembered]:
        """Every subscription as `conn`'s snapshot stores it, oldest first: the ids and
        versions are read, and only the subscriptions whose version this memory does not
        hold are read and parsed."""
        stored = rows.versions(conn)
        live = {id_ for id_, _ in stored}
        for gone in [id_ for id_ in self._held if id_ not in live]:
            self._forget(gone)
        stale = [id_ for id_, v in stored if id_ not in self._held or self._held[id_].version != v]
        parsed = [
            (row, SubscriptionSpec.from_json(row.spec))
            for row in (rows.subscriptions(conn, stale) if stale else ())
        ]
        aliases = aliases_of(conn, [spec.watch for _, spec in parsed])
        for row, spec in parsed:
            radius = Radius.from_json(row.radius)
            seeds = frozenset(str(s) for s in watched_datasets(conn, spec.watch, aliases))
            self._put(Remembered(row.id, row.version, spec, radius, seeds))
        self._order = [id_ for id_, _ in stored if id_ in self._held]
        return [self._held[id_] for id_ in self._order]

    def concerned(self, touched: Collection[str]) -> list[Remembered]:
        """The subscriptions a change touching the entities `touched` (ids as text) may
        concern, oldest first."""
        if not touched:
            return []
        found: set[uuid.UUID] = set()
        for entity in touched:
            found |= self._by_entity.get(entity, set())
        return [
            held for id_ in self._order if (held := self._held[id_]).everywhere or held.id in found
        ]

    def stored(self, subscription: uuid.UUID, version: int, radius: Radius) -> None:
        """The dispatcher stored `radius` as the subscription's `version`."""
        held = self._held.get(subscription)
        if held is not None:
            self._put(Remembered(subscription, version, held.spec, radius, held.seeds))

    def seen(self, subscription: uuid.UUID, seeds: frozenset[str]) -> None:
        """The datasets the subscription watched when it was last looked at."""
        held = self._held.get(subscription)
        if held is not None and held.seeds != seeds:
            self._put(Remembered(held.id, held.version, held.spec, held.radius, seeds))

    def _put(self, held: Remembered) -> None:
        """Hold `held` in place of what was held of it, indexed again only by the entities
        that changed: a round that stores a radius mostly moves a few of its many."""
        old = self._held.get(held.id)
        before = frozenset() if old is None else old.entities
        self._held[held.id] = held
        if old is None and held.id not in self._order:
            self._order.append(held.id)
        for entity in before - held.entities:
            self._unindex(entity, held.id)
        for entity in held.entities - before:
            self._by_entity.setdefault(entity, set()).add(held.id)

    def _forget(self, subscription: uuid.UUID) -> None:
        held = self._held.pop(subscription, None)
        if held is None:
            return
        for entity in held.entities:
            self._unindex(entity, subscription)

    def _unindex(self, entity: str, subscription: uuid.UUID) -> None:
        holders = self._by_entity.get(entity)
        if holders is not None:
            holders.discard(subscription)
            if not holders:
                del self._by_entity[entity]


class SchemaMemory:
    """The schema fields of datasets, read at one change-log position and kept while each
    round brings them forward by the datasets the changes since name."""

    def __init__(self) -> None:
        self._names: dict[str, frozenset[SchemaField]] = {}
        self._position: int | None = None

    def at(self, conn: Connection, since: int, now: int, changed: Iterable[str] | None) -> Schemas:
        """The schemas of `conn`'s snapshot, at position `now`, whose changes since position
        `since` named the datasets `changed` (None: unknown, a reload or a trimmed log).
        What was read at another position than `since` is dropped."""
        if changed is None or self._position != since:
            self._names.clear()
        else:
            for dataset in changed:
                self._names.pop(dataset, None)
        self._position = now
        return Schemas(conn, self._names)
