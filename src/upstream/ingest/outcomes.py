"""Per-event outcomes for a batch posted with `atomic=false` (design §3.1).

The default batch is all-or-nothing. A producer that buffers events (an outbox, a Kafka
bridge) would rather keep the good events of a batch and retry or drop the bad ones, so with
`atomic=false` each event is validated and stored on its own and the caller learns, per index,
whether it was stored or why not. The events still go through the process's group commit, one
post each: they share transactions while all is well, and one refused by the store is written
again alone, so it fails only itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from upstream.ingest.service import prepare_each
from upstream.model.errors import InvalidInput, ServiceError, StoreUnavailable
from upstream.model.facts import EventFacts
from upstream.store.writer import WriteResult

WriteEvents = Callable[[Sequence[EventFacts]], Awaitable[WriteResult]]


@dataclass(frozen=True)
class EventOutcome:
    """What became of the event at `index`: `result` when it was stored (or already was),
    else `error`."""

    index: int
    result: WriteResult | None = None
    error: ServiceError | None = None
    facts: EventFacts | None = None


async def store_each(
    documents: Sequence[Any],
    write: WriteEvents,
    *,
    batch: bool,
    sql_lineage: bool = True,
    texts: Sequence[str] | None = None,
) -> list[EventOutcome]:
    """Store every valid document of `documents` through `write`, one post per event, and
    answer one outcome per document, in order. An unavailable database fails the whole
    request (re-sending is safe), since no event's outcome is known then."""
    prepared = await asyncio.to_thread(
        prepare_each, documents, batch=batch, sql_lineage=sql_lineage, texts=texts
    )
    good = [(i, item) for i, item in enumerate(prepared) if isinstance(item, EventFacts)]
    written = await asyncio.gather(*(write([facts]) for _, facts in good), return_exceptions=True)
    outcomes = {
        i: EventOutcome(i, error=item)
        for i, item in enumerate(prepared)
        if isinstance(item, InvalidInput)
    }
    for (index, facts), result in zip(good, written, strict=True):
        if isinstance(result, WriteResult):
            outcomes[index] = EventOutcome(index, result=result, facts=facts)
        elif isinstance(result, ServiceError) and not isinstance(result, StoreUnavailable):
            located = result
            if batch and isinstance(result, InvalidInput):
                located = result.within(f"[{index}]")
            outcomes[index] = EventOutcome(index, error=located, facts=facts)
        else:
            raise result
    return [outcomes[i] for i in range(len(prepared))]
