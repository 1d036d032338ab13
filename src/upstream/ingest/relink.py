"""Replay stored events through the writer: a rebuild's groups, and the earlier runs and
declarations a new symlink turned into readers or writers of another dataset's alias.

A symlink that arrives after the reads of its alias (design §3.3) changes which node those
reads name. Their derived rows are forgotten (`upstream.store.aliases.forget_stale`) and
their raw events applied again, in the write's transaction, so the graph is what it would
have been had the symlink come first.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
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
    """Apply stored `events` (rows of seq, payload, received_at, in seq order) as one batch,
    each counted as received when it was (`apply_facts`' `received`), which gives what
    writing them in the transactions they arrived in gave; the seq of every event the rules
    refuse is added to `refused`."""
    facts: list[EventFacts] = []
    received: dict[str, datetime] = {}
    for row in events:
        try:
            translated = translate(json.loads(row.payload))
        except InvalidInput:
            if refused is not None:
                refused.append(row.seq)
            continue
        facts.append(translated)
        received[translated.record.key] = row.received_at
    if facts:
        # The SQL step as a write does it: against what the run stored before (§3.3).
        batch = with_run_sql_lineage(conn, facts)
        stale = apply_facts(conn, batch, max(received.values()), received)
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
