"""The write recipe: the one way events become rows, for a post, a Kafka batch, a replay
of the earlier events a symlink or a late input changed, and a rebuild.

A symlink that arrives after the reads of its alias (design §3.3) changes which node those
reads name. Their derived rows are forgotten (`upstream.store.aliases.forget_stale`) and
their raw events applied again, in the write's transaction, so the graph is what it would
have been had the symlink come first. Likewise a run's inputs that arrive after its SQL
(`upstream.ingest.sql_runs`): the run is forgotten and all its events applied again, the
SQL resolved against every dataset they list, as if they had come in the usual order.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from upstream.ingest.documents import translate_document
from upstream.ingest.sql_runs import with_run_sql_lineage
from upstream.model.emission import snapshot_times, superseded
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store.aliases import forget_runs, forget_stale
from upstream.store.run_datasets import RunDatasets, datasets_of_runs
from upstream.store.writer import WriteResult, apply_facts, write_facts


@dataclass(frozen=True)
class Replay:
    """Events already kept, applied again: when each was received (by event key); the
    datasets of the runs being derived again (`known`); the last seq a rebuild has reached
    (`through`), so the runs derived again leave the later events for their turn."""

    received: Mapping[str, datetime]
    known: Mapping[uuid.UUID, RunDatasets] | None = None
    through: int | None = None
    #: The events are every stored event of their runs (runs derived again); otherwise a run
    #: with a snapshot event among them (design §3.3) is derived again whole after, since its
    #: earlier events, applied before, may be superseded.
    whole_runs: bool = False


def apply_recipe(
    conn: Connection, facts: Sequence[EventFacts], now: datetime, replay: Replay | None = None
) -> WriteResult:
    """Run the write recipe on `facts` in the transaction of `conn`:

    1. the SQL step: each `sql` facet resolved against every dataset its run lists
       (`ingest.sql_runs.with_run_sql_lineage`);
    2. the write: the new events kept, received `now`, and their facts applied
       (`store.writer.write_facts`); a `replay` applies events already kept, each as
       received when it was (`store.writer.apply_facts`);
    3. relink: the runs and declarations that named an identity the batch's symlinks made
       an alias, derived again from their events (`relink`);
    4. rederive: the runs whose SQL the batch's events resolve differently, and the
       streaming runs with a new snapshot (which supersedes their earlier events' lineage,
       design §3.3), derived again from all their events (`rederive_runs`).

    On PostgreSQL the transaction takes these advisory locks (each set in key order, held
    until it ends), in this order:

    1. exclusive, each run the batch lists datasets or SQL for, in step 1
       (`ingest.sql_runs.with_run_sql_lineage`);
    2. exclusive, the alias buckets of the identities the batch's symlinks regroup, in step 2
       (`store.aliases._record_claims`);
    3. shared, the alias buckets of every dataset the batch names, in step 2
       (`store.aliases.canonical_batch`);
    4. exclusive, each run the batch describes, in step 2 (`store.writer.apply_facts`), and
       again as an owner whose flows are derived again (`store.flow_writer.rederive_flows`);
    5. last, in step 2's short final step (`store.writer.write_shared_rows`), the rows
       batches share, each table in id order: the namespaces, jobs and datasets named, then,
       exclusive, each job or dataset the batch declares lineage for (`store.writer._declare`),
       then the lineage sets its links point to. Writers naming the same jobs and datasets
       wait on each other only for this step and the commit, never for each other's whole
       batch;
    6. steps 3 and 4 replay earlier events through this same recipe, which takes locks 1-5
       again for those events' runs and datasets.

    A rebuild holds, beside them, its session lock for the whole rebuild
    (`store.migrate.session_lock`), taken before any transaction of its own."""
    step = with_run_sql_lineage(conn, facts, replay.known if replay else None)
    if replay is None:
        result = write_facts(conn, step.facts, now)
    else:
        stale = apply_facts(conn, step.facts, now, replay.received)
        keys = frozenset(f.record.key for f in step.facts)
        result = WriteResult(stored=len(keys), duplicates=0, new_keys=keys, stale=stale)
    relink(conn, result.stale, [f.record.key for f in facts if f.record.key in result.new_keys])
    again = set(step.rederive)
    if replay is None or not replay.whole_runs:
        new = [f for f in step.facts if f.record.key in result.new_keys]
        again |= set(snapshot_times(new))
    rederive_runs(conn, again, through=replay.through if replay else None)
    return result


def replay_events(
    conn: Connection,
    events: Iterable[Any],
    refused: list[int] | None = None,
    known: Mapping[uuid.UUID, RunDatasets] | None = None,
    *,
    whole_runs: bool = False,
) -> None:
    """Apply stored `events` (rows of seq, payload, received_at, in seq order) as one batch
    through the recipe, each counted as received when it was, which gives what writing them
    in the transactions they arrived in gave; the seq of every event the rules refuse is
    added to `refused`. `known`: all the datasets of the runs being derived again.
    `whole_runs`: the events are every stored event of their runs (`Replay.whole_runs`)."""
    rows = list(events)
    facts: list[EventFacts] = []
    received: dict[str, datetime] = {}
    for row in rows:
        try:
            translated = translate_document(json.loads(row.payload))
        except InvalidInput:
            if refused is not None:
                refused.append(row.seq)
            continue
        facts.append(translated)
        received[translated.record.key] = row.received_at
    if facts:
        # A rebuild has not replayed the events after these yet: the runs derived again
        # leave them out.
        replay = Replay(received, known=known, through=rows[-1].seq, whole_runs=whole_runs)
        apply_recipe(conn, superseded(facts), max(received.values()), replay)


def relink(conn: Connection, stale: Collection[uuid.UUID], batch_keys: Sequence[str]) -> None:
    """Re-derive, from their events up to the batch of `batch_keys`, the runs and
    declarations that named an identity now an alias (`stale`)."""
    if stale:
        replay_events(conn, forget_stale(conn, stale, batch_keys))


def rederive_runs(
    conn: Connection, runs: Collection[uuid.UUID], *, through: int | None = None
) -> None:
    """Derive `runs` again from all their stored events (up to seq `through`, when given),
    their SQL resolved against every dataset any of the events lists, so what an event
    stored too early resolved goes."""
    if runs:
        known = datasets_of_runs(conn, runs)
        events = forget_runs(conn, runs, through)
        replay_events(conn, events, known=known, whole_runs=True)
