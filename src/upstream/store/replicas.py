"""Reads from PostgreSQL streaming replicas (design §6, deployment).

A server given `read_database_url` sends its reads — queries and the graph index's change
log — to the first replica that is close enough behind the primary, and everything else
(writes, migrations, locks, the check that a position was ever given) to the primary.

**Lag** is measured in the change log's own terms, every `CHECK_EVERY` seconds by a thread of
its own: the replica's newest position against the primary's, and, when it is behind, how
long ago the primary recorded the oldest change the replica still lacks. A replica caught up
lags 0 s however long since the last write; one that does not answer within
`replica_probe_timeout` (stopped, unreachable) lags without bound. A replica lagging more
than `max_replica_lag` is not read from: reads go to the next one, then to the primary, or —
with `replica_lag_fallback = "unavailable"` — are answered 503.

**Read-your-writes.** Positions are the same on the primary and its physical replicas. A read
that names a position (`reads_must_include`) is checked in its own snapshot: a replica snapshot that
does not include the position (the replica in use changed between the wait and the read) is
given up for the primary's, so a read never misses the write it named.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from upstream.model.errors import ReplicasBehind
from upstream.store import schema as t
from upstream.store.change_log import HEAD, position, seen_in_snapshot

log = logging.getLogger("upstream.store")

#: Seconds between two measurements of every replica's lag.
CHECK_EVERY = 0.5

#: What a server does with a read when no replica is close enough behind.
Fallback = Literal["primary", "unavailable"]

_wanted: ContextVar[int | None] = ContextVar("upstream_read_after", default=None)


def reads_must_include(wanted: int | None) -> None:
    """Reads from now on in this context (one request's) must include position `wanted`;
    the request's handler runs in a copy of the context its dependencies set this in."""
    _wanted.set(wanted)


def includes_wanted(conn: Connection) -> bool:
    """Whether `conn`'s snapshot includes the position the reads of this context must see.
    The position it reads is noted for the snapshot (`change_log.seen_in_snapshot`): the
    read's graph index asks it next, and is answered without a statement."""
    wanted = _wanted.get()
    if wanted is None:
        return True
    at = position(conn)
    seen_in_snapshot(conn, at)
    return at >= wanted


@dataclass(frozen=True)
class ReplicaLag:
    """One replica, as last measured."""

    name: str
    #: How long ago the primary recorded the oldest change the replica lacks; inf when the
    #: replica does not answer (or has not been measured yet).
    seconds: float
    #: Positions the replica is behind the primary; None when it does not answer.
    positions: int | None
    #: The newest position the replica has replayed; None when it does not answer.
    replayed: int | None = None

    @property
    def answers(self) -> bool:
        return self.positions is not None


#: A replica's newest position (0 for an empty log).
_REPLAYED = sa.select(sa.func.coalesce(HEAD, 0))


def _primary_since(replayed: int) -> sa.Select[tuple[int, datetime | None]]:
    """The primary's newest position, and when it recorded the first after `replayed`."""
    oldest_missing = (
        sa.select(t.change_log.c.recorded_at)
        .where(t.change_log.c.position > replayed)
        .order_by(t.change_log.c.position)
        .limit(1)
        .scalar_subquery()
    )
    return sa.select(sa.func.coalesce(HEAD, 0), oldest_missing)


def _look(probe: Engine, statement: sa.Select[Any]) -> tuple[Any, ...]:
    """The one row of `statement`, asked on `probe` (`engine.probe_engine`), whose pooled
    connection is not pinged: a connection the server dropped since the last look fails
    (and is thrown away), and the look is asked again once, on a new one."""
    for attempt in (1, 2):
        try:
            with probe.connect() as conn:
                return tuple(conn.execute(statement).one())
        except DBAPIError as exc:
            if attempt == 2 or not exc.connection_invalidated:
                raise
    raise AssertionError("unreachable")


class Replica:
    """A replica: the engine reads use, and a small one of its own to measure it with, whose
    every wait is short, so a replica that stopped is noticed within seconds."""

    def __init__(self, name: str, engine: Engine, probe: Engine) -> None:
        self.name = name
        self.engine = engine
        self.probe = probe
        self.lag = ReplicaLag(name, math.inf, None)
        #: Whether reads may use it (see `ReplicaSet.measure`).
        self.serving = False


class ReplicaSet:
    """The replicas of one server, tried in order, and the thread that measures them."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        primary_probe: Engine,
        *,
        max_lag: float,
        fallback: Fallback,
        probe_seconds: float,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.replicas = list(replicas)
        self.probe_seconds = probe_seconds
        self.max_lag = max_lag
        self.fallback = fallback
        self._primary_probe = primary_probe
        self._now = now
        #: The primary's newest position, as last measured.
        self._primary_newest = 0
        self._stopped = threading.Event()
        self.measure()
        self._thread = threading.Thread(
            target=self._measure_until_stopped, name="upstream-replica-lag", daemon=True
        )
        self._thread.start()

    @property
    def engines(self) -> list[Engine]:
        return [replica.engine for replica in self.replicas]

    def lags(self) -> list[ReplicaLag]:
        return [replica.lag for replica in self.replicas]

    def close_enough(self, lag: ReplicaLag) -> bool:
        return lag.seconds <= self.max_lag

    def engine_for_reads_now(self) -> Engine | None:
        """The first replica reads may use; None when there is none."""
        for replica in self.replicas:
            if replica.serving:
                return replica.engine
        return None

    def engine_for_reads(self) -> Engine | None:
        """The first replica close enough behind; None when reads go to the primary. Raises
        ReplicasBehind when none is and the primary must not be read from."""
        engine = self.engine_for_reads_now()
        if engine is not None or self.fallback == "primary":
            return engine
        raise ReplicasBehind(
            f"every read replica lags more than max_replica_lag ({self.max_lag:g} s) behind "
            "the primary; retry later"
        )

    def measure(self) -> None:
        """Measure every replica now (the thread does it every `CHECK_EVERY` seconds), and
        say which reads may use: one close enough behind, except that a replica given up is
        taken back only once it has replayed what the primary had at the measurement
        before. Reads on the primary meanwhile brought the graph index to the primary's
        positions; a replica still behind them would have each read load its own older
        copy of the index."""
        primary_before = self._primary_newest
        for replica in self.replicas:
            lag = self._lag_of(replica)
            serving = self.close_enough(lag) and (
                replica.serving or (lag.replayed is not None and lag.replayed >= primary_before)
            )
            if serving != replica.serving or lag.answers != replica.lag.answers:
                self._log_change(lag, serving)
            replica.lag = lag
            replica.serving = serving

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(self.probe_seconds * 3)
        for engine in (self._primary_probe, *(r.probe for r in self.replicas)):
            engine.dispose()

    def _measure_until_stopped(self) -> None:
        while not self._stopped.wait(CHECK_EVERY):
            self.measure()

    def _lag_of(self, replica: Replica) -> ReplicaLag:
        """One statement on the replica (its newest position) and one on the primary (its
        newest, and when it recorded the oldest change the replica lacks)."""
        try:
            (replayed,) = _look(replica.probe, _REPLAYED)
            newest, oldest_missing = _look(self._primary_probe, _primary_since(replayed))
            self._primary_newest = newest
        except Exception as exc:  # any failure: it cannot be read from; the cause is logged
            if replica.lag.answers:
                log.warning("read replica %s does not answer: %s", replica.name, exc)
            return ReplicaLag(replica.name, math.inf, None)
        seconds = 0.0
        if oldest_missing is not None:
            seconds = max((self._now() - oldest_missing).total_seconds(), 0.0)
        return ReplicaLag(replica.name, seconds, max(newest - replayed, 0), replayed)

    def _log_change(self, lag: ReplicaLag, serving: bool) -> None:
        if not lag.answers:
            return  # logged with its cause
        if serving:
            log.info("reading from replica %s again (%.1f s behind)", lag.name, lag.seconds)
        else:
            log.warning(
                "not reading from replica %s (%.1f s behind) until it is within "
                "max_replica_lag (%g s) and has caught up",
                lag.name,
                lag.seconds,
                self.max_lag,
            )
