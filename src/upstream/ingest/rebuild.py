"""Re-derive every derived table from the kept raw events (design §6: raw events are the
truth), for `upstream db rebuild` and for a start whose derivation rules changed.

Events are replayed in the order they were stored, up to `BATCH_EVENTS` of them in one
transaction, each counted as received when it was (`apply_facts`' `received`): replaying them
as one batch gives what writing them in the transactions they arrived in gave, without paying
for a transaction per event (events posted one at a time made a rebuild crawl at tens of
events a second). After each transaction the position is recorded, so a rebuild that was
interrupted continues from there with the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.engine import Connection

from upstream.ingest.relink import replay_events
from upstream.ingest.service import translate_document
from upstream.store.change_log import RELOAD, record
from upstream.store.engine import Store
from upstream.store.event_log import count_events, events_after
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
            done = count_events(conn, seq_at_most=position)
            total = done + count_events(conn, seq_after=position)
        replayed = 0
        refused: list[int] = []
        if progress:
            progress(done, total)
        while True:
            with store.read() as conn:
                rows = events_after(conn, position, BATCH_EVENTS)
            if not rows:
                break
            last = rows[-1].seq
            store.write(partial(_apply, rows, refused, last))
            position = last
            done += len(rows)
            replayed += len(rows)
            if progress:
                progress(done, total)
        store.write(_finish)
    # A retried transaction translates its events again: each refusal counts once.
    return RebuildReport(replayed, tuple(dict.fromkeys(refused)))


def _start(conn: Connection) -> int:
    """Where to continue from: the recorded position of an interrupted rebuild by these
    rules, else 0 after clearing the derived tables, which tells every reader of the change
    log to read everything again (the replay's transactions then record what they derive)."""
    state = read_state(conn)
    if state.get(REBUILD_VERSION_KEY) == DERIVED_VERSION and REBUILD_SEQ_KEY in state:
        return int(state[REBUILD_SEQ_KEY])
    clear_derived(conn)
    record(conn, RELOAD, ())
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


def _apply(events: Sequence[Any], refused: list[int], last: int, conn: Connection) -> None:
    replay_events(conn, events, translate_document, refused)
    write_state(conn, **{REBUILD_SEQ_KEY: str(last)})
