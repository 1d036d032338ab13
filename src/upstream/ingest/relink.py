"""Replay stored events through the writer: a rebuild's groups, and the earlier runs and
declarations a new symlink turned into readers or writers of another dataset's alias.

A symlink that arrives after the reads of its alias (DESIGN §3.3) changes which node those
reads name. Their derived rows are forgotten (`upstream.store.aliases.forget_stale`) and
their raw events applied again, in the write's transaction, so the graph is what it would
have been had the symlink come first.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import groupby
from typing import Any

from sqlalchemy.engine import Connection

from upstream.ingest.sql_runs import with_run_sql_lineage
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store.aliases import forget_stale
from upstream.store.writer import apply_facts

#: Turns a stored event's JSON document into its facts (`upstream.ingest.service`).
Translate = Callable[[Any], EventFacts]


def replay_events(
    conn: Connection,
    events: Iterable[Any],
    translate: Translate,
    refused: list[int] | None = None,
) -> None:
    """Apply stored `events` (rows of seq, payload, received_at, in seq order), each group
    received together with its own ingestion time; the seq of every event the rules refuse
    is added to `refused`."""
    for received_at, group in groupby(events, key=lambda row: row.received_at):
        facts: list[EventFacts] = []
        for row in group:
            try:
                facts.append(translate(json.loads(row.payload)))
            except InvalidInput:
                if refused is not None:
                    refused.append(row.seq)
        if facts:
            # The SQL step as a write does it: against what the run stored before (§3.3).
            stale = apply_facts(conn, with_run_sql_lineage(conn, facts), received_at)
            relink(conn, stale, [f.record.key for f in facts], translate)


def relink(
    conn: Connection,
    stale: Collection[uuid.UUID],
    batch_keys: Sequence[str],
    translate: Translate,
) -> None:
    """Re-derive, from their events, the runs and declarations stored before the batch of
    `batch_keys` that named an identity now an alias (`stale`)."""
    if stale:
        replay_events(conn, forget_stale(conn, stale, batch_keys), translate)
