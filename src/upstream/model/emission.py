"""Streaming runs (design §3.3): a job whose `jobType.emissionPattern` says COMPLETE_SNAPSHOT
states, in each event, its run's whole lineage as of that event, so the newest snapshot
replaces what the run's earlier events said; ACCUMULATIVE events (and events that say nothing)
add to the run's lineage, as every run's events always have.

"Newest" is by event time, not arrival, so every order of a run's events gives the same
answer: the lineage of the run is what its newest snapshot and the events at or after it
state. The run itself (start, end, state, facets) still comes from all its events.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from upstream.model.facts import EventFacts


def snapshot_times(events: Sequence[EventFacts]) -> dict[uuid.UUID, datetime]:
    """The time of the newest snapshot event of each run that has one among `events`."""
    newest: dict[uuid.UUID, datetime] = {}
    for facts in events:
        run = facts.record.run_id
        if facts.snapshot and run is not None:
            at = facts.record.event_time
            newest[run] = max(at, newest.get(run, at))
    return newest


def superseded(events: Sequence[EventFacts]) -> list[EventFacts]:
    """`events` (every stored event of their runs) with the lineage of each event older than
    its run's newest snapshot left out: its reads, writes, edges, versions, recorded
    operations and SQL. Everything else it says about the run, job and datasets stays."""
    newest = snapshot_times(events)
    return [_without_lineage(facts) if _older(facts, newest) else facts for facts in events]


def _older(facts: EventFacts, newest: dict[uuid.UUID, datetime]) -> bool:
    run = facts.record.run_id
    return run is not None and run in newest and facts.record.event_time < newest[run]


def _without_lineage(facts: EventFacts) -> EventFacts:
    return replace(facts, relations=[], edges=[], versions=[], operation_sets=[], sql=None)
