"""Which workflow run each run belongs to, and which datasets are temporary to it (§3.4).

Parent chains are read a level of nesting at a time for every run asked about at once (one
query per level of nesting, never one per run) and kept for the rest of the query, so a walk
that meets the same runs again asks the store nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.model.workflow import (
    ChainLink,
    TemporaryMark,
    is_temporary_to,
    is_workflow,
    workflow_run,
)
from upstream.query.relations import RunMark, temporary_marks
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.window import run_in_window

#: A name ending with a run id, as CDAP names a workflow run's local datasets.
_RUN_ID_SUFFIX = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE
)


@dataclass(frozen=True)
class _Run:
    job_id: uuid.UUID
    parent_run_id: uuid.UUID | None
    job_is_workflow: bool


class WorkflowIndex:
    """Runs' parent chains, loaded on demand within one read transaction."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._runs: dict[uuid.UUID, _Run] = {}
        #: Per dataset, the relations that may make it temporary (`temporary_marks`).
        self._marks: dict[uuid.UUID, list[RunMark]] = {}
        #: Per workflow job, the runs inside its runs in the query's window (`members`).
        self._members: dict[uuid.UUID, set[uuid.UUID]] = {}
        #: `workflow_of` answers, kept only when the run's whole chain was loaded.
        self._links: dict[uuid.UUID, ChainLink | None] = {}

    def _columns(self) -> sa.Select[Any]:
        return sa.select(
            t.runs.c.id,
            t.runs.c.job_id,
            t.runs.c.parent_run_id,
            t.jobs.c.job_type,
            t.jobs.c.seen_as_parent,
        ).select_from(t.runs.join(t.jobs, t.jobs.c.id == t.runs.c.job_id))

    def _remember(self, rows: Iterable[Any]) -> set[uuid.UUID]:
        """Keep the chain links of `rows` (from `_columns`); return their run ids."""
        loaded: set[uuid.UUID] = set()
        for run_id, job_id, parent, job_type, seen_as_parent in rows:
            workflow = is_workflow(job_type, seen_as_parent)
            self._runs[run_id] = _Run(job_id, parent, workflow)
            loaded.add(run_id)
        return loaded

    def load(self, run_ids: Iterable[uuid.UUID | None]) -> None:
        """Read the chains of `run_ids` up to their roots, one query per level of nesting."""
        wanted = {r for r in run_ids if r is not None and r not in self._runs}
        while wanted:
            for matches in id_filters(self._conn, t.runs.c.id, wanted):
                self._remember(self._conn.execute(self._columns().where(matches)).all())
            parents = {self._runs[r].parent_run_id for r in wanted if r in self._runs}
            wanted = {p for p in parents if p is not None and p not in self._runs}

    def workflow_of(self, run_id: uuid.UUID | None) -> ChainLink | None:
        """The workflow run of a loaded run (None: in no workflow, or declared lineage)."""
        if run_id is None:
            return None
        if run_id in self._links:
            return self._links[run_id]
        chain: list[ChainLink] = []
        seen: set[uuid.UUID] = set()
        current: uuid.UUID | None = run_id
        while current is not None and current in self._runs and current not in seen:
            seen.add(current)
            run = self._runs[current]
            chain.append(ChainLink(current, run.job_id, run.job_is_workflow))
            current = run.parent_run_id
        link = workflow_run(chain) if chain else None
        if current is None or current in seen:  # the whole chain was known: final answer
            self._links[run_id] = link
        return link

    def members(self, workflow_jobs: Collection[uuid.UUID], window: Window) -> set[uuid.UUID]:
        """The runs whose workflow run is a run of one of `workflow_jobs` (those runs
        included when they are their own workflow run), kept per workflow job for the query
        (its window does not change). Workflow runs are read when they
        overlap `window` or are known only as parents (no times); their descendants are read
        one level of nesting at a time."""
        wanted = set(workflow_jobs)
        self._read_members(wanted - set(self._members), window)
        return {run for job in wanted for run in self._members[job]}

    def _read_members(self, workflow_jobs: set[uuid.UUID], window: Window) -> None:
        for job in workflow_jobs:
            self._members[job] = set()
        roots: set[uuid.UUID] = set()
        runs = t.runs.c
        for matches in id_filters(self._conn, runs.job_id, workflow_jobs):
            query = self._columns().where(
                matches, sa.or_(~runs.has_events, run_in_window(runs.id, window))
            )
            roots |= self._remember(self._conn.execute(query).all())
        self.load(roots)
        found = set(roots)
        frontier = set(roots)
        while frontier:
            children: set[uuid.UUID] = set()
            for matches in id_filters(self._conn, runs.parent_run_id, frontier):
                query = self._columns().where(matches)
                children |= self._remember(self._conn.execute(query).all())
            frontier = children - found
            found |= frontier
        for run in found:
            link = self.workflow_of(run)
            if link is not None and link.job_id in workflow_jobs:
                self._members[link.job_id].add(run)

    def prefetch(self, run_ids: Iterable[uuid.UUID], dataset_ids: Iterable[uuid.UUID]) -> None:
        """Read the temporary marks of `dataset_ids` and the parent chains of `run_ids` and
        of the marks' runs, all at once, for a walk about to ask for them level by level."""
        self._read_marks(dataset_ids)
        marked = {m.run_id for marks in self._marks.values() for m in marks}
        self.load({*run_ids, *marked})

    def workflows_of(self, run_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
        """The workflow jobs of the loaded `run_ids` (those in a workflow run)."""
        return {link.job_id for run in run_ids if (link := self.workflow_of(run)) is not None}

    def possibly_temporary(self, names: dict[uuid.UUID, str]) -> set[uuid.UUID]:
        """Which of the datasets in `names` (id -> name) may be temporary to some workflow
        run: those with a mark, and those whose name ends with a run id (CDAP's suffix).
        Only their relations' runs need their chains read to decide."""
        self._read_marks(names)
        return {d for d, name in names.items() if self._marks[d] or _RUN_ID_SUFFIX.search(name)}

    def marked_temporary(self, datasets: Collection[uuid.UUID]) -> set[uuid.UUID]:
        """Which of `datasets` some run marks temporary (`datasetType`, the recorder's
        `temporary=True`), in a workflow or not: those `rollup=jobs` leaves out too."""
        self._read_marks(datasets)
        return {d for d in datasets if any(m.mark.temporary for m in self._marks[d])}

    def temporaries(
        self, pairs: Collection[tuple[uuid.UUID, uuid.UUID]], names: dict[uuid.UUID, str]
    ) -> set[tuple[uuid.UUID, uuid.UUID]]:
        """Which (dataset, workflow run) `pairs` are temporary: `names` maps dataset ids to
        names (for CDAP's run-id suffix); the marks are read once per dataset."""
        datasets = {dataset for dataset, _ in pairs}
        self._read_marks(datasets)
        self.load(m.run_id for d in datasets for m in self._marks[d])

        def marks_in(dataset: uuid.UUID, wf_run: uuid.UUID) -> Iterable[TemporaryMark]:
            for m in self._marks[dataset]:
                link = self.workflow_of(m.run_id)
                if link is not None and link.run_id == wf_run:
                    yield m.mark

        return {
            (dataset, wf_run)
            for dataset, wf_run in pairs
            if is_temporary_to(names.get(dataset, ""), wf_run, marks_in(dataset, wf_run))
        }

    def _read_marks(self, datasets: Iterable[uuid.UUID]) -> None:
        unread = set(datasets) - set(self._marks)
        for dataset in unread:
            self._marks[dataset] = []
        for mark in temporary_marks(self._conn, unread):
            self._marks[mark.dataset_id].append(mark)
