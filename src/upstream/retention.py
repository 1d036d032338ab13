"""Retention (design §5): `upstream db prune`, the server's daily prune, and the monthly
partitions the server makes ahead (PostgreSQL).

Both remove the same thing, by `upstream.store.prune`; here the cutoff is worked out and the
work scheduled. Several server processes may each run the daily prune: on PostgreSQL the
first takes an advisory lock for its transaction and the others skip that day's turn.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool

from upstream.model.timeexpr import parse_duration
from upstream.store.engine import Store, lock_for_transaction
from upstream.store.partitions import make_ahead
from upstream.store.prune import PruneReport, prune

log = logging.getLogger("upstream.retention")

#: How often the server prunes when `retention` is set.
PRUNE_EVERY = timedelta(days=1)
_PRUNE_LOCK = 0x50524E45  # "PRNE"


def prune_store(
    store: Store, cutoff: datetime, *, keep_events: bool = False, dry_run: bool = False
) -> PruneReport | None:
    """Prune `store` at `cutoff` in one transaction; None when another process is pruning."""

    def work(conn: Connection) -> PruneReport | None:
        # A prune of months of history may take longer than any one request may.
        if not lock_for_transaction(conn, _PRUNE_LOCK):
            return None
        return prune(conn, cutoff, keep_events=keep_events, dry_run=dry_run)

    return store.write(work)


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
