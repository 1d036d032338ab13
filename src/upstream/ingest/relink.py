"""Replay stored events through the writer: a rebuild's groups, the earlier runs and
declarations a new symlink turned into readers or writers of another dataset's alias, and
the runs whose SQL was resolved before all their datasets were known.

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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from upstream.ingest.sql_runs import with_run_sql_lineage
from upstream.model.emission import snapshot_times, superseded
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store.aliases import forget_runs, forget_stale
from upstream.store.run_datasets import RunDatasets, datasets_of_runs
from upstream.store.writer import apply_facts

#: Turns a stored event's JSON document into its facts (`upstream.ingest.service`).
Translate = Callable[[Any], EventFacts]


def replay_events(
    conn: Connection,
    events: Iterable[Any],
    translate: Translate,
    refused: list[int] | None = None,
    known: Mapping[uuid.UUID, RunDatasets] | None = None,
    *,
    whole_runs: bool = False,
) -> None:
    """Apply stored `events` (rows of seq, payload, received_at, in seq order) as one batch,
    each counted as received when it was (`apply_facts`' `received`), which gives what
    writing them in the transactions they arrived in gave; the seq of every event the rules
    refuse is added to `refused`. `known`: all the datasets of the runs being derived again.
    `whole_runs`: the events are every stored event of their runs (a run derived again);
    otherwise a run with a snapshot event here (design §3.3) is derived again whole after,
    since its earlier events, applied before, may be superseded."""
    rows = list(events)
    facts: list[EventFacts] = []
    received: dict[str, datetime] = {}
    for row in rows:
        try:
            translated = translate(json.loads(row.payload))
        except InvalidInput:
            if refused is not None:
                refused.append(row.seq)
            continue
        facts.append(translated)
        received[translated.record.key] = row.received_at
    if facts:
        facts = superseded(facts)
        # The SQL step as a write does it: against every dataset of the run (§3.3).
        step = with_run_sql_lineage(conn, facts, known)
        stale = apply_facts(conn, step.facts, max(received.values()), received)
        relink(conn, stale, [f.record.key for f in facts], translate)
        again = step.rederive if whole_runs else step.rederive | set(snapshot_times(facts))
        # A rebuild has not replayed the events after these yet: leave them out.
        rederive_runs(conn, again, translate, through=rows[-1].seq)


def relink(
    conn: Connection,
    stale: Collection[uuid.UUID],
    batch_keys: Sequence[str],
    translate: Translate,
) -> None:
    """Re-derive, from their events up to the batch of `batch_keys`, the runs and
    declarations that named an identity now an alias (`stale`)."""
    if stale:
        replay_events(conn, forget_stale(conn, stale, batch_keys), translate)


def rederive_runs(
    conn: Connection,
    runs: Collection[uuid.UUID],
    translate: Translate,
    *,
    through: int | None = None,
) -> None:
    """Derive `runs` again from all their stored events (up to seq `through`, when given),
    their SQL resolved against every dataset any of the events lists, so what an event
    stored too early resolved goes."""
    if runs:
        known = datasets_of_runs(conn, runs)
        events = forget_runs(conn, runs, through)
        replay_events(conn, events, translate, known=known, whole_runs=True)
