"""Re-derive every derived table from the kept raw events (DESIGN §6: raw events are the
truth), for `upstream db rebuild` and for a start whose derivation rules changed.

Events are replayed in the order they were stored, up to `BATCH_EVENTS` of them in one
transaction, each counted as received when it was (`apply_facts`' `received`): replaying them
as one batch gives what writing them in the transactions they arrived in gave, without paying
for a transaction per event (events posted one at a time made a rebuild crawl at tens of
events a second). After each transaction the position is recorded, so a rebuild that was
interrupted continues from there with the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.ingest.service import translate_document
from upstream.ingest.sql_runs import with_run_sql_lineage
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.flow_writer import DERIVED_VERSION
from upstream.store.migrate import session_lock, upgrade
from upstream.store.state import (
    DERIVED_VERSION_KEY,
    REBUILD_SEQ_KEY,
    REBUILD_VERSION_KEY,
    clear_derived,
    read_state,
    write_state,
)
from upstream.store.writer import apply_facts

#: Events read and written per transaction, at most.
BATCH_EVENTS = 500
_REBUILD_LOCK = 0x55505342  # "UPSB"

#: Called with (events replayed so far, events to replay in all).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class RebuildReport:
    """How many events were replayed, and which stored events the rules now refuse (kept,
    but contributing nothing)."""

    events: int
    refused: tuple[int, ...] = ()


def needs_rebuild(store: Store) -> bool:
    """The derived tables were not built (completely) by the running code's rules."""
    with store.read() as conn:
        return read_state(conn).get(DERIVED_VERSION_KEY) != DERIVED_VERSION


def prepare_store(
    store: Store, progress: Callable[[], AbstractContextManager[Progress]] | None = None
) -> RebuildReport | None:
    """Migrate the schema, then rebuild the derived tables if other rules built them;
    `progress` makes the progress callback, only when there is a rebuild to show."""
    upgrade(store)
    if not needs_rebuild(store):
        return None
    with progress() if progress else nullcontext(None) as show:
        return rebuild(store, show, only_if_needed=True)


def rebuild(
    store: Store, progress: Progress | None = None, *, only_if_needed: bool = False
) -> RebuildReport:
    """Clear the derived tables and derive them again from every kept event (or continue a
    rebuild by the same rules that was interrupted). Concurrent callers take turns."""
    with session_lock(store, _REBUILD_LOCK):
        if only_if_needed and not needs_rebuild(store):
            return RebuildReport(0)
        position = store.write(_start)
        with store.read() as conn:
            done: int = conn.execute(_count(seq_at_most=position)).scalar_one()
            total: int = done + conn.execute(_count(seq_after=position)).scalar_one()
        replayed = 0
        refused: list[int] = []
        if progress:
            progress(done, total)
        while True:
            with store.read() as conn:
                rows = conn.execute(_next_events(position)).all()
            if not rows:
                break
            translated = _translated(rows, refused)
            facts = [f for f, _ in translated]
            received = {f.record.key: received_at for f, received_at in translated}
            store.write(partial(_apply, facts, received, rows[-1].seq))
            position = rows[-1].seq
            done += len(rows)
            replayed += len(rows)
            if progress:
                progress(done, total)
        store.write(_finish)
    return RebuildReport(replayed, tuple(refused))


def _start(conn: Connection) -> int:
    """Where to continue from: the recorded position of an interrupted rebuild by these
    rules, else 0 after clearing the derived tables."""
    state = read_state(conn)
    if state.get(REBUILD_VERSION_KEY) == DERIVED_VERSION and REBUILD_SEQ_KEY in state:
        return int(state[REBUILD_SEQ_KEY])
    clear_derived(conn)
    write_state(
        conn,
        **{DERIVED_VERSION_KEY: None, REBUILD_VERSION_KEY: DERIVED_VERSION, REBUILD_SEQ_KEY: "0"},
    )
    return 0


def _finish(conn: Connection) -> None:
    write_state(
        conn,
        **{DERIVED_VERSION_KEY: DERIVED_VERSION, REBUILD_VERSION_KEY: None, REBUILD_SEQ_KEY: None},
    )


def _count(*, seq_at_most: int | None = None, seq_after: int | None = None) -> sa.Select[Any]:
    query = sa.select(sa.func.count()).select_from(t.events)
    if seq_at_most is not None:
        query = query.where(t.events.c.seq <= seq_at_most)
    if seq_after is not None:
        query = query.where(t.events.c.seq > seq_after)
    return query


def _next_events(position: int) -> sa.Select[Any]:
    e = t.events.c
    return (
        sa.select(e.seq, e.payload, e.received_at)
        .where(e.seq > position)
        .order_by(e.seq)
        .limit(BATCH_EVENTS)
    )


def _translated(
    events: Sequence[Any], refused: list[int]
) -> list[tuple[EventFacts, datetime]]:
    """The facts of each event the rules accept, with when it was received."""
    facts: list[tuple[EventFacts, datetime]] = []
    for seq, payload, received_at in events:
        try:
            facts.append((translate_document(json.loads(payload)), received_at))
        except InvalidInput:
            refused.append(seq)
    return facts


def _apply(
    facts: list[EventFacts], received: dict[str, datetime], last: int, conn: Connection
) -> None:
    if facts:
        # The SQL step as a write does it: against what the run stored before (§3.3).
        batch = with_run_sql_lineage(conn, facts)
        apply_facts(conn, batch, max(received.values()), received)
    write_state(conn, **{REBUILD_SEQ_KEY: str(last)})
