"""Streaming runs (design §3.3): a job whose `jobType.emissionPattern` says COMPLETE_SNAPSHOT
states, in each event, its run's whole lineage as of that event, so the newest snapshot
replaces what the run's earlier events said; ACCUMULATIVE events (and events that say nothing)
add to the run's lineage, as every run's events always have.

"Newest" is by event time, not arrival, so every order of a run's events gives the same
answer: the lineage of the run is what its newest snapshot and the events at or after it
state. The run itself (start, end, state, facets) still comes from all its events.

History (design §4.5): each read or write of such a run keeps the time it appeared — the
event that first stated it, unless a snapshot between then and now left it out, in which case
the first event after that snapshot to state it again. A topic the job has read all along
keeps the time of its first event; one it began reading last week, last week's.
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
    appeared = _appeared(events, set(newest))
    return [
        _without_lineage(facts) if _older(facts, newest) else _dated(facts, appeared)
        for facts in events
    ]


def _appeared(events: Sequence[EventFacts], runs: set[uuid.UUID]) -> dict[uuid.UUID, datetime]:
    """When each relation of the runs with a snapshot (`runs`) appeared in its run's lineage
    as it stands after all `events`, by relation id (see the module docstring)."""
    current: dict[uuid.UUID, dict[uuid.UUID, datetime]] = {run: {} for run in runs}
    ordered = sorted(
        (f for f in events if f.record.run_id in runs),
        key=lambda f: (f.record.event_time, not f.snapshot, f.record.key),
    )
    for facts in ordered:
        assert facts.record.run_id is not None
        held = current[facts.record.run_id]
        at = facts.record.event_time
        stated = {relation.id for relation in facts.relations}
        if facts.snapshot:
            held = {key: held.get(key, at) for key in stated}
            current[facts.record.run_id] = held
        else:
            for key in stated:
                held.setdefault(key, at)
    return {key: at for held in current.values() for key, at in held.items()}


def _dated(facts: EventFacts, appeared: dict[uuid.UUID, datetime]) -> EventFacts:
    """`facts` with each relation dated when it appeared (only relations `appeared` names)."""
    if not any(relation.id in appeared for relation in facts.relations):
        return facts
    relations = [
        replace(relation, event_time=appeared.get(relation.id, relation.event_time))
        for relation in facts.relations
    ]
    return replace(facts, relations=relations)


def _older(facts: EventFacts, newest: dict[uuid.UUID, datetime]) -> bool:
    run = facts.record.run_id
    return run is not None and run in newest and facts.record.event_time < newest[run]


def _without_lineage(facts: EventFacts) -> EventFacts:
    return replace(facts, relations=[], edges=[], versions=[], operation_sets=[], sql=None)
