"""Retention (design §5): `upstream db prune`, the server's daily prune, the monthly
partitions the server makes ahead (PostgreSQL), and a publishing front's pruning of the batch
decisions no process needs any more (design §6).

Both prunes remove the same thing, by `upstream.store.prune` (and the decided batches, by
`upstream.store.published_batches`); here the cutoff is worked out and the work scheduled.
Several server processes may each run the daily prune: on PostgreSQL the first takes an
advisory lock for its transaction and the others skip that day's turn. So do the fronts with
the batches: they make a row per post of several events, so prune them far more often.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool

from upstream.model.timeexpr import parse_duration
from upstream.store import published_batches
from upstream.store import schema as t
from upstream.store.engine import Store, lock_for_transaction
from upstream.store.partitions import make_ahead
from upstream.store.prune import PruneReport, prune

log = logging.getLogger("upstream.retention")

#: How often the server prunes when `retention` is set.
PRUNE_EVERY = timedelta(days=1)
_PRUNE_LOCK = 0x50524E45  # "PRNE"
#: How often a publishing front prunes the decided batches.
PRUNE_BATCHES_EVERY = timedelta(minutes=10)
_BATCHES_LOCK = 0x50424154  # "PBAT"


def prune_store(
    store: Store, cutoff: datetime, *, keep_events: bool = False, dry_run: bool = False
) -> PruneReport | None:
    """Prune `store` at `cutoff` in one transaction; None when another process is pruning."""

    def work(conn: Connection) -> PruneReport | None:
        # A prune of months of history may take longer than any one request may.
        if not lock_for_transaction(conn, _PRUNE_LOCK):
            return None
        report = prune(conn, cutoff, keep_events=keep_events, dry_run=dry_run)
        # Not a run's: no reload for the readers of the change log.
        report.removed[t.published_batches.name] = published_batches.prune(
            conn, time.time(), dry_run=dry_run
        )
        return report

    return store.write(work)


def prune_batches(store: Store) -> int | None:
    """Remove the decided batches no process needs any more (`published_batches.prune`);
    how many, None when another process is at it."""

    def work(conn: Connection) -> int | None:
        if not lock_for_transaction(conn, _BATCHES_LOCK):
            return None
        return published_batches.prune(conn, time.time())

    return store.write(work)


async def prune_batches_often(store: Store) -> None:
    """Prune the decided batches now and then once every `PRUNE_BATCHES_EVERY`, until
    cancelled; a failure is logged and tried again next time."""
    while True:
        try:
            removed = await run_in_threadpool(prune_batches, store)
        except Exception:
            log.exception("retention: pruning the decided batches of the front failed")
        else:
            if removed:
                log.info("retention: removed %d decided batches no process needs", removed)
        await asyncio.sleep(PRUNE_BATCHES_EVERY.total_seconds())


async def make_partitions_daily(store: Store) -> None:
    """Make the coming months' partitions (PostgreSQL; nothing on SQLite) once every
    `PRUNE_EVERY`, until cancelled: a server that runs for months without a restart still
    writes every month into a partition of its own, which a prune can drop whole. A failure
    is logged and tried again next time; meanwhile writes go to the default partition."""
    while True:
        await asyncio.sleep(PRUNE_EVERY.total_seconds())
        try:
            made = await run_in_threadpool(store.write, make_ahead)
        except Exception:
            log.exception("retention: making the coming months' partitions failed")
        else:
            if made:
                log.info("retention: made partitions %s", ", ".join(made))


async def prune_daily(store: Store, retention: str) -> None:
    """Prune what is older than `retention` now and then once every `PRUNE_EVERY`, until
    cancelled (the server's shutdown). A failed prune is logged and tried again next time."""
    keep = parse_duration(retention)
    while True:
        cutoff = datetime.now(UTC) - keep
        try:
            report = await run_in_threadpool(prune_store, store, cutoff)
        except Exception:
            log.exception("retention: pruning runs that ended before %s failed", cutoff)
        else:
            if report is not None:
                log.info(
                    "retention: removed %d runs that ended before %s (%s)",
                    report.runs,
                    cutoff.isoformat(),
                    ", ".join(f"{n} {table}" for table, n in report.removed.items() if n),
                )
        await asyncio.sleep(PRUNE_EVERY.total_seconds())
