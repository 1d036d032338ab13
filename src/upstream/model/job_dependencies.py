"""Job dependencies (design §3.3): OpenLineage's `jobDependencies` run facet says which job
runs a run waits for (`upstream`) and which wait for it (`downstream`). That is control flow
— the order jobs run in — never data flow: these edges join jobs to jobs and no dataset walk
follows them. Pure rules, so ingest, rebuild and the tests read the facet one way.

Every statement becomes one edge upstream job (run) → downstream job (run), whichever end
stated it. A run's statements accumulate over its events, as its inputs and outputs do; when
two events state the same edge with different details, the one with the later event time
counts (a tie: the larger details), so every arrival order keeps the same edge.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upstream.model.facets import JobDependenciesFacet, JobDependency
from upstream.model.identity import JobRef, stable_id

JOB_DEPENDENCIES_FACET = "jobDependencies"
#: The details of an edge, as stored and shown (besides its ends).
DETAILS = ("dependency_type", "sequence_trigger_rule", "status_trigger_rule", "trigger_rule")


@dataclass(frozen=True)
class JobDependencyFact:
    """One control-flow edge a run's facet states: `upstream` runs before `downstream`."""

    stated_by: uuid.UUID
    upstream_job: JobRef
    upstream_run: uuid.UUID | None
    downstream_job: JobRef
    downstream_run: uuid.UUID | None
    stated_at: datetime
    dependency_type: str | None = None
    sequence_trigger_rule: str | None = None
    status_trigger_rule: str | None = None
    #: The facet's own `trigger_rule`: how the downstream run's upstreams trigger it
    #: (ALL_SUCCESS…); only on edges its own run states as upstream of itself.
    trigger_rule: str | None = None

    @property
    def id(self) -> uuid.UUID:
        """One edge per stating run and pair of ends: the same edge stated again (a later
        event of the run) is the same row."""
        return stable_id(
            "job_dependency",
            self.stated_by,
            self.upstream_job.id,
            self.upstream_run,
            self.downstream_job.id,
            self.downstream_run,
        )


def dependencies_stated(
    facet: JobDependenciesFacet, run_id: uuid.UUID, job: JobRef, stated_at: datetime
) -> list[JobDependencyFact]:
    """The edges `facet`, sent by run `run_id` of `job`, states. An entry naming the run
    itself is no dependency and is left out; an entry listed twice counts once (the last)."""
    found: dict[uuid.UUID, JobDependencyFact] = {}
    for entry in facet.upstream:
        if not _names_itself(entry, run_id):
            ends = ((_ref(entry), _run(entry)), (job, run_id))
            fact = _edge(entry, run_id, stated_at, *ends, trigger_rule=facet.trigger_rule)
            found[fact.id] = fact
    for entry in facet.downstream:
        if not _names_itself(entry, run_id):
            fact = _edge(entry, run_id, stated_at, (job, run_id), (_ref(entry), _run(entry)))
            found[fact.id] = fact
    return [found[key] for key in sorted(found)]


def latest_statement(stored: Mapping[str, Any], new: Mapping[str, Any]) -> Mapping[str, Any]:
    """Of two statements of one edge (rows with `stated_at` and `DETAILS`), the one that
    counts: the later, else the larger details — the same whatever order they arrive in."""
    return new if _order(new) > _order(stored) else stored


def _order(row: Mapping[str, Any]) -> tuple[Any, ...]:
    stated = row["stated_at"]
    instant = stated.timestamp() if isinstance(stated, datetime) else stated
    return (instant, *(row[name] or "" for name in DETAILS))


def _names_itself(entry: JobDependency, run_id: uuid.UUID) -> bool:
    return entry.run is not None and entry.run.runId == run_id


def _ref(entry: JobDependency) -> JobRef:
    return JobRef(entry.job.namespace, entry.job.name)


def _run(entry: JobDependency) -> uuid.UUID | None:
    return entry.run.runId if entry.run is not None else None


def _edge(
    entry: JobDependency,
    run_id: uuid.UUID,
    stated_at: datetime,
    upstream: tuple[JobRef, uuid.UUID | None],
    downstream: tuple[JobRef, uuid.UUID | None],
    trigger_rule: str | None = None,
) -> JobDependencyFact:
    return JobDependencyFact(
        stated_by=run_id,
        upstream_job=upstream[0],
        upstream_run=upstream[1],
        downstream_job=downstream[0],
        downstream_run=downstream[1],
        stated_at=stated_at,
        dependency_type=entry.kind,
        sequence_trigger_rule=entry.sequence_trigger_rule,
        status_trigger_rule=entry.status_trigger_rule,
        trigger_rule=trigger_rule,
    )
