"""Control flow between jobs in lineage answers (design §3.3, §4.2, §4.5): the edges the
`jobDependencies` run facet states, next to — never inside — the data flow.

Job lineage lists the dependencies `levels` hops out from its job along control flow
(`upstream`: the jobs it waits for, and theirs; `downstream`: the jobs waiting for it; `both`:
the two walks), stated by runs in the window; run lineage lists the edges one run is an end
of. A walk never passes through a deleted job. Edges with the same ends and details are one
entry listing every pair of runs that stated them.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import TypedDict

from upstream.model.direction import Direction, Step
from upstream.model.job_dependencies import DETAILS
from upstream.model.window import Window
from upstream.query.answers import (
    JobDependencyEntry,
    ProgramEntry,
    RunDependencyEnd,
    RunDependencyEntry,
)
from upstream.query.lineage_render import program_entries
from upstream.store import schema as t
from upstream.store.deletion import not_deleted
from upstream.store.dialect import id_filters
from upstream.store.window import run_overlaps

_D = t.job_dependencies
_STATING_RUN = t.runs.alias("stating_run")


class Dependency(NamedTuple):
    """One stored edge: upstream job (run) runs before downstream job (run)."""

    upstream_job: uuid.UUID
    upstream_run: uuid.UUID | None
    downstream_job: uuid.UUID
    downstream_run: uuid.UUID | None
    dependency_type: str | None
    sequence_trigger_rule: str | None
    status_trigger_rule: str | None
    trigger_rule: str | None


_COLUMNS = (
    _D.c.upstream_job_id,
    _D.c.upstream_run_id,
    _D.c.downstream_job_id,
    _D.c.downstream_run_id,
    *(_D.c[name] for name in DETAILS),
)


def dependencies_around(
    conn: Connection, job_id: uuid.UUID, window: Window, direction: Direction, levels: int
) -> list[Dependency]:
    """The edges `levels` hops out from `job_id` along control flow in `direction`, stated
    by runs that overlap `window` (and had started by its `as_of`): nearest hop first, each
    hop in a fixed order, so a cap keeps the nearest."""
    steps: tuple[Step, ...] = ("upstream", "downstream") if direction == "both" else (direction,)
    hops: dict[Dependency, int] = {}
    for step in steps:
        seen, frontier = {job_id}, {job_id}
        for hop in range(levels):
            edges = _step(conn, frontier, step, window)
            for edge in edges:
                hops[edge] = min(hops.get(edge, hop), hop)
            reached = {e.upstream_job if step == "upstream" else e.downstream_job for e in edges}
            frontier = reached - seen
            seen |= reached
            if not frontier:
                break
    return sorted(hops, key=lambda edge: (hops[edge], *(str(value) for value in edge)))


def _step(
    conn: Connection, jobs: Collection[uuid.UUID], step: Step, window: Window
) -> set[Dependency]:
    """The edges one hop from `jobs`: into them (`upstream`) or out of them."""
    near = _D.c.downstream_job_id if step == "upstream" else _D.c.upstream_job_id
    found: set[Dependency] = set()
    for matches in id_filters(conn, near, jobs):
        query = (
            sa.select(*_COLUMNS)
            .join_from(_D, _STATING_RUN, _STATING_RUN.c.id == _D.c.run_id)
            .where(
                matches,
                run_overlaps(_STATING_RUN, window),
                not_deleted(_D.c.upstream_job_id, _D.c.downstream_job_id),
            )
        )
        found.update(Dependency(*row) for row in conn.execute(query))
    return found


def job_dependency_entries(
    conn: Connection, edges: list[Dependency], shown: Collection[str], room: int
) -> tuple[list[JobDependencyEntry], dict[str, ProgramEntry], bool]:
    """The answer's entries for `edges` (nearest first), the programs they name by key, and
    whether some were left out: the jobs an answer does not show yet (`shown`: its keys) may
    add at most `room` nodes, taken in the edges' order."""
    programs = program_entries(conn, {str(job) for e in edges for job in _jobs(e)})
    nodes, kept, cut = set(shown), [], False
    for e in edges:
        new = {programs[str(job)][0] for job in _jobs(e)} - nodes
        if len(new) > room:
            cut = True
            break
        room -= len(new)
        nodes |= new
        kept.append(e)
    grouped: dict[tuple[Any, ...], set[tuple[str, str]]] = defaultdict(set)
    for e in kept:
        ends = (programs[str(e.upstream_job)][0], programs[str(e.downstream_job)][0])
        grouped[(*ends, *e[4:])].add((_text(e.upstream_run), _text(e.downstream_run)))
    entries: list[JobDependencyEntry] = []
    for (upstream, downstream, *details), pairs in sorted(grouped.items(), key=_group_order):
        entry: JobDependencyEntry = {
            "upstream": upstream,
            "downstream": downstream,
            **_details(details),
            "runs": [
                {"upstream": up or None, "downstream": down or None} for up, down in sorted(pairs)
            ],
        }
        entries.append(entry)
    named = {
        key
        for e in kept
        for key in (programs[str(e.upstream_job)][0], programs[str(e.downstream_job)][0])
    }
    return entries, dict(sorted(v for v in programs.values() if v[0] in named)), cut


def run_dependencies(
    conn: Connection, run_id: uuid.UUID, direction: Direction
) -> list[RunDependencyEntry]:
    """The edges run `run_id` is an end of (those it states name it as an end too);
    `upstream` keeps the runs it waited for, `downstream` those waiting for it."""
    ends = {"upstream": _D.c.downstream_run_id, "downstream": _D.c.upstream_run_id}
    wanted = [
        ends[step] == run_id for step in ("upstream", "downstream") if direction in (step, "both")
    ]
    query = sa.select(*_COLUMNS).where(
        sa.or_(*wanted), not_deleted(_D.c.upstream_job_id, _D.c.downstream_job_id)
    )
    edges = {Dependency(*row) for row in conn.execute(query)}
    names = _job_names(conn, {job for e in edges for job in _jobs(e)})
    entries: list[RunDependencyEntry] = [
        {
            "upstream": _end(names[e.upstream_job], e.upstream_run),
            "downstream": _end(names[e.downstream_job], e.downstream_run),
            **_details(e[4:]),
        }
        for e in edges
    ]
    return sorted(entries, key=_entry_order)


def _jobs(edge: Dependency) -> tuple[uuid.UUID, uuid.UUID]:
    return edge.upstream_job, edge.downstream_job


def _text(run: uuid.UUID | None) -> str:
    return "" if run is None else str(run)


class _Details(TypedDict):
    dependencyType: str | None
    sequenceTriggerRule: str | None
    statusTriggerRule: str | None
    triggerRule: str | None


def _details(values: Sequence[str | None]) -> _Details:
    return {
        "dependencyType": values[0],
        "sequenceTriggerRule": values[1],
        "statusTriggerRule": values[2],
        "triggerRule": values[3],
    }


def _group_order(item: tuple[tuple[Any, ...], set[tuple[str, str]]]) -> tuple[str, ...]:
    return tuple("" if value is None else value for value in item[0])


def _job_names(conn: Connection, ids: set[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str]]:
    j = t.jobs.c
    found: dict[uuid.UUID, tuple[str, str]] = {}
    for matches in id_filters(conn, j.id, ids):
        query = sa.select(j.id, j.namespace, j.name).where(matches)
        found.update({row.id: (row.namespace, row.name) for row in conn.execute(query)})
    return found


def _end(job: tuple[str, str], run: uuid.UUID | None) -> RunDependencyEnd:
    return {"namespace": job[0], "name": job[1], "runId": None if run is None else str(run)}


def _entry_order(entry: RunDependencyEntry) -> tuple[str, ...]:
    up, down = entry["upstream"], entry["downstream"]
    return (
        up["namespace"],
        up["name"],
        up["runId"] or "",
        down["namespace"],
        down["name"],
        down["runId"] or "",
        entry["dependencyType"] or "",
    )
