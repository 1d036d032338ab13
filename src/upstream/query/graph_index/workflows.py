"""Workflows in the graph index (design §3.4, §6): which workflow run each run belongs to,
which runs a workflow contains, and which datasets are temporary to a workflow run.

The index keeps, per run, its job, the run it names as parent and whether it had events of
its own; per job, whether it is a workflow; the few relations that mark a dataset temporary
or name a lifecycle state; and, per dataset whose name ends with a run id, that run. Each
run's workflow run follows from these (`workflow_runs`, made once per version when a walk
first asks), so no answer reads a parent chain or a mark from SQL.

A job becomes a workflow when another run names it as parent, which changes the row of the
job, not of its runs: a version made by a change re-reads the flag of every job the log
names, of every job of a changed run, and of the job of every parent those runs name.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.model.workflow import is_workflow
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.store import graph_rows

if TYPE_CHECKING:
    from upstream.query.graph_index.graph import Table

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]

#: A run id at the end of a name, as CDAP names a workflow run's local datasets.
_RUN_ID_SUFFIX = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE
)
#: Bits of a mark: the producer marked the dataset temporary; a run CREATEd it; DROPped it.
TEMPORARY, CREATE, DROP = 1, 2, 4


def _grown(column: npt.NDArray[Any], size: int, fill: Any) -> npt.NDArray[Any]:
    """`column` with places up to `size` (the last, for later numbers, filled with `fill`)."""
    grown = np.full(size, fill, dtype=column.dtype)
    keep = min(size, len(column)) - 1
    grown[:keep] = column[:keep]
    return grown


def _at(column: npt.NDArray[Any], numbers: npt.NDArray[np.integer]) -> npt.NDArray[Any]:
    """`column` at `numbers`; NONE and numbers made later read the last place."""
    last = len(column) - 1
    return column[np.where((numbers >= 0) & (numbers < last), numbers, last)]


def _nodes(numbers: npt.NDArray[np.integer], size: int) -> Ints:
    """`numbers` as nodes of an adjacency over `size` places: NONE reads the last, empty one."""
    found: Ints = np.where(numbers >= 0, numbers, size - 1).astype(np.int64)
    return found


def _mark_bits(temporary: bool, lifecycles: Sequence[str] | None) -> int:
    states = {str(state).upper() for state in lifecycles or ()}
    return (
        (TEMPORARY if temporary else 0)
        | (CREATE if "CREATE" in states else 0)
        | (DROP if "DROP" in states else 0)
    )


@dataclass(frozen=True)
class Workflows:
    """The workflow columns of one version of the index. Per-entity columns have one place
    more than the entities numbered when they were made, which later numbers read."""

    #: Per run: its job, the run it names as parent (NONE: none), whether it had events.
    run_job: npt.NDArray[np.int32]
    run_parent: npt.NDArray[np.int32]
    run_events: Flags
    #: Per job: whether it is a workflow (`model.workflow.is_workflow`).
    job_workflow: Flags
    #: The marks: run, dataset, bits (TEMPORARY | CREATE | DROP), one row per relation.
    mark_run: npt.NDArray[np.int32]
    mark_dataset: npt.NDArray[np.int32]
    mark_bits: npt.NDArray[np.int8]
    #: Per dataset: the run whose id its name ends with (NONE: none).
    name_run: npt.NDArray[np.int32]

    @property
    def nbytes(self) -> int:
        columns = (self.run_job, self.run_parent, self.run_events, self.job_workflow)
        marks = (self.mark_run, self.mark_dataset, self.mark_bits, self.name_run)
        return sum(c.nbytes for c in (*columns, *marks))

    @cached_property
    def workflow_runs(self) -> npt.NDArray[np.int32]:
        """Each run's workflow run (`model.workflow.workflow_run`), NONE for none: the nearest
        run up its parent chain, itself included, whose job is a workflow; else the root of
        its chain when it has a parent. A chain ends at a parent with no row. Chains never
        loop (the writer drops a link that would close one), so each step shortens them."""
        size = len(self.run_job)
        known = self.run_job >= 0
        workflow = known & _at(self.job_workflow, self.run_job)
        found = np.full(size, NONE, dtype=np.int32)
        origin = np.flatnonzero(known)
        current = origin.copy()
        for _ in range(size):
            if not len(current):
                break
            here = workflow[current]
            found[origin[here]] = current[here]
            origin, current = origin[~here], current[~here]
            parent = self.run_parent[current].astype(np.int64)
            goes_on = (parent >= 0) & known[np.maximum(parent, 0)]
            root = ~goes_on & (current != origin)
            found[origin[root]] = current[root]
            origin, current = origin[goes_on], parent[goes_on]
        return found

    @cached_property
    def _children(self) -> Adjacency:
        return Adjacency(self.run_parent, len(self.run_job))

    @cached_property
    def _marks_by_dataset(self) -> Adjacency:
        return Adjacency(self.mark_dataset, len(self.name_run))

    def workflow_of(self, runs: npt.NDArray[np.integer]) -> npt.NDArray[np.int32]:
        """The workflow run of each of `runs` (NONE: none, or a declaration's NONE)."""
        found: npt.NDArray[np.int32] = np.where(runs >= 0, _at(self.workflow_runs, runs), NONE)
        return found

    def members(self, jobs: Ints, in_window: Flags) -> Ints:
        """The runs whose workflow run is a run of one of `jobs` (those runs included when
        they are their own workflow run) below a run of `jobs` that had no events of its own
        or is in the window (`in_window`, per run): a walk's rollup counts those as the
        workflow's."""
        wanted = np.zeros(len(self.job_workflow), dtype=np.bool_)
        wanted[jobs] = True
        of_jobs = (self.run_job >= 0) & _at(wanted, self.run_job)
        roots = np.flatnonzero(of_jobs & (~self.run_events | in_window))
        below = np.zeros(len(self.run_job), dtype=np.bool_)
        below[roots] = True
        frontier = roots
        while len(frontier):
            children, _ = self._children.rows_of(frontier)
            frontier = children[~below[children]]
            below[frontier] = True
        runs = np.flatnonzero(below)
        links = self.workflow_runs[runs]
        keep = (links >= 0) & of_jobs[np.maximum(links, 0)]
        found: Ints = runs[keep]
        return found

    def temporary(self, datasets: Ints, workflow_runs: Ints) -> Flags:
        """Whether each dataset of `datasets` is temporary to the workflow run beside it
        (`model.workflow.is_temporary_to`): its name ends with the run's id, or a run
        inside that workflow run marked it temporary, or runs inside it CREATE and DROP it."""
        found: Flags = (workflow_runs >= 0) & (_at(self.name_run, datasets) == workflow_runs)
        rows, owner = self._marks_by_dataset.rows_of(_nodes(datasets, len(self.name_run)))
        inside = self.workflow_of(self.mark_run[rows]) == workflow_runs[owner]
        rows, owner = rows[inside], owner[inside]
        bits = np.zeros(len(datasets), dtype=np.int8)
        np.bitwise_or.at(bits, owner, self.mark_bits[rows])
        found |= (bits & TEMPORARY) != 0
        found |= (bits & (CREATE | DROP)) == (CREATE | DROP)
        found &= workflow_runs >= 0
        return found

    def are_workflows(self, jobs: Ints) -> Flags:
        """Which of `jobs` are workflows (NONE and jobs numbered later: none)."""
        found: Flags = _at(self.job_workflow, jobs)
        return found

    def marked(self, datasets: Ints) -> Flags:
        """Which of `datasets` some run marks temporary, in a workflow or not."""
        rows, owner = self._marks_by_dataset.rows_of(_nodes(datasets, len(self.name_run)))
        temporary = (self.mark_bits[rows] & TEMPORARY) != 0
        return np.bincount(owner[temporary], minlength=len(datasets)) > 0

    def may_be_temporary(self, datasets: Ints) -> Flags:
        """Which of `datasets` may be temporary to some workflow run: a mark, or a name
        ending with a run id. Only these need their runs' workflow runs looked at."""
        _, owner = self._marks_by_dataset.rows_of(_nodes(datasets, len(self.name_run)))
        marked = np.bincount(owner, minlength=len(datasets)) > 0
        named: Flags = _at(self.name_run, datasets) >= 0
        return marked | named


def job_kinds(conn: Connection, jobs: Collection[uuid.UUID] | None = None) -> dict[str, bool]:
    """Whether each job (all, or `jobs`) is a workflow, by id text."""
    return {
        job: is_workflow(job_type, seen_as_parent)
        for job, job_type, seen_as_parent in graph_rows.job_kind_rows(conn, jobs)
    }


def load(
    conn: Connection, runs: Table, jobs: Numbering, datasets: Numbering, run_ids: Numbering
) -> Workflows:
    """The workflow columns as `conn`'s snapshot holds them; `runs` are every run's
    columns (`graph._runs`)."""
    return _made(
        None,
        runs,
        job_kinds(conn),
        graph_rows.mark_rows(conn),
        graph_rows.run_suffix_rows(conn),
        (jobs, datasets, run_ids),
    )


def applied(
    conn: Connection,
    held: Workflows,
    runs: Table,
    changed: Collection[uuid.UUID],
    named: Collection[uuid.UUID],
    numberings: tuple[Numbering, Numbering, Numbering],
) -> Workflows:
    """`held` with the rows of the `changed` runs (`runs`, read again) and their marks, and
    the workflow flag of every job `named` by the change, of the changed runs' jobs, of the
    jobs of the parents they name, and of jobs numbered since: a new child run can make its
    parent's job a workflow without any run of that job changing."""
    jobs, datasets, _ = numberings
    parents = runs["parent"]
    held_jobs = held.run_job
    parents = parents[(parents >= 0) & (parents < len(held_jobs) - 1)]
    parent_jobs = held_jobs[parents]
    wanted = set(jobs.texts.take(runs["job"][runs["job"] >= 0]))
    wanted |= set(jobs.texts.take(parent_jobs[parent_jobs >= 0]))
    wanted |= {text for i in named if jobs.known(text := str(i)) is not None}
    wanted |= set(jobs.texts[len(held.job_workflow) - 1 :])
    new_datasets = [uuid.UUID(text) for text in datasets.texts[len(held.name_run) - 1 :]]
    suffixes = graph_rows.run_suffix_rows(conn, new_datasets) if new_datasets else []
    marks = graph_rows.mark_rows(conn, changed) if changed else []
    kinds = job_kinds(conn, [uuid.UUID(text) for text in wanted]) if wanted else {}
    return _made(held, runs, kinds, marks, suffixes, numberings, changed)


def _made(
    held: Workflows | None,
    runs: Table,
    kinds: dict[str, bool],
    marks: Sequence[graph_rows.MarkRow],
    suffixes: Sequence[tuple[str, str]],
    numberings: tuple[Numbering, Numbering, Numbering],
    changed: Collection[uuid.UUID] = (),
) -> Workflows:
    jobs, datasets, run_ids = numberings
    kind_jobs = jobs.numbers(list(kinds))
    mark_runs = run_ids.numbers(m[0] for m in marks)
    mark_datasets = datasets.numbers(m[1] for m in marks)
    # CDAP's rule compares the name's end with a run's id: the run is numbered here if new.
    named_runs = [
        (datasets.number(dataset), run_ids.number(name[-36:].lower()))
        for dataset, name in suffixes
        if _RUN_ID_SUFFIX.search(name)
    ]
    run_size, job_size, dataset_size = len(run_ids) + 1, len(jobs) + 1, len(datasets) + 1
    if held is None:
        run_job = np.full(run_size, NONE, dtype=np.int32)
        run_parent = np.full(run_size, NONE, dtype=np.int32)
        run_events = np.zeros(run_size, dtype=np.bool_)
        job_workflow = np.zeros(job_size, dtype=np.bool_)
        name_run = np.full(dataset_size, NONE, dtype=np.int32)
        mark_columns = [np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)]
        bits = np.zeros(0, dtype=np.int8)
    else:
        run_job = _grown(held.run_job, run_size, NONE)
        run_parent = _grown(held.run_parent, run_size, NONE)
        run_events = _grown(held.run_events, run_size, False)
        job_workflow = _grown(held.job_workflow, job_size, False)
        name_run = _grown(held.name_run, dataset_size, NONE)
        numbers = (run_ids.known(str(i)) for i in changed)
        gone = np.array([n for n in numbers if n is not None], dtype=np.int32)
        kept = ~np.isin(held.mark_run, gone)
        mark_columns = [held.mark_run[kept], held.mark_dataset[kept]]
        bits = held.mark_bits[kept]
    run_job[runs["run"]] = runs["job"]
    run_parent[runs["run"]] = runs["parent"]
    run_events[runs["run"]] = runs["events"]
    job_workflow[kind_jobs] = np.fromiter(kinds.values(), dtype=np.bool_, count=len(kinds))
    for dataset, run in named_runs:
        name_run[dataset] = run
    return Workflows(
        run_job=run_job,
        run_parent=run_parent,
        run_events=run_events,
        job_workflow=job_workflow,
        mark_run=np.concatenate([mark_columns[0], mark_runs]),
        mark_dataset=np.concatenate([mark_columns[1], mark_datasets]),
        mark_bits=np.concatenate(
            [bits, np.fromiter((_mark_bits(m[2], m[3]) for m in marks), dtype=np.int8)]
        ),
        name_run=name_run,
    )
