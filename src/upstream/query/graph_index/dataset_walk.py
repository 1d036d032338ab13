"""Every relation a dataset-lineage walk without a rollup shows, with its level, walked on the
index (design §4.2, §6).

A node's level is one more than its least depth in the walk's reach, and the relations each
level shows follow from the nodes alone:

- `both`: from a dataset, every job with a relation to it in the window (same depth); from a
  job, every dataset it has a relation with (one deeper). Every relation of a job reached at
  depth d is shown at level d + 1.
- `upstream` (`downstream` mirrors it): from a dataset, the sources of the flows into it (one
  deeper) and the jobs at the far end of the job-end edges into it (same depth); from a job,
  the datasets and jobs at the far end of its job-end edges (one deeper). A dataset at depth d
  shows, at level d + 1, its writers, both ends of every flow into it and the job-end edges'
  near relations; a job, the dataset at the far end of each of its job-end edges.

With `rollup=workflow` (`walk_rolled_up`, design §3.4) the rule is the same, on one more kind
of node: a step made by a run inside workflow run W into a dataset temporary to W reaches
(dataset, W) at the same depth, which shows the dataset's near relations and flows of W's
runs only and steps on along W's flows alone. The relations shown are then rolled up
(`graph_index.rollup`). `both` rolled up keeps CDAP's level loop (`_both_rolled_up`): which
runs count as a workflow's depends on what the walk met before.

A reader limited to some namespaces (`VisibleNodes`) is walked as if the nodes it may not
see were not there: no walk passes through one, no relation with one is shown, and each such
relation the walk met is counted (`upstream.query.graph_index.visibility`).

A relation keeps its least level. Its components are those stored on its (dataset, job, run,
access), or "" when none is. Nothing deleted is passed through or shown; a run's rows count
when the run overlaps the window and had started by its `as_of` time; declarations are those
in force then (design §4.1, §4.5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Direction
from upstream.model.window import Window
from upstream.query.graph_index.adjacency import NO_ROWS, Adjacency
from upstream.query.graph_index.graph import DATASET, JOB, Graph, Table
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.rollup import RollUp
from upstream.query.graph_index.visibility import VisibleNodes

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
_UNREACHED = np.iinfo(np.int64).max
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The number of the unnamed component "" (numbered first in every index).
UNNAMED = 0


class ShownRelation(NamedTuple):
    """A relation as an answer shows it: job `job_id` read or wrote dataset `dataset_id` in
    run `run_id` (None: declared) through `component` ("" when unnamed), ids as their
    hyphenated text."""

    dataset_id: str
    job_id: str
    run_id: str | None
    access: str
    component: str


@dataclass(frozen=True)
class FoundRelations:
    """The relations a walk shows, as the index numbers them: one row of (dataset, job,
    run, write, component) numbers each (run NONE: declared; write 1 or 0), distinct, each
    with the least level it is shown at. No Python object is made per relation: an answer
    cuts, collapses and names them as columns (`upstream.query.relation_table`)."""

    rows: Ints
    levels: Ints

    def __len__(self) -> int:
        return len(self.levels)

    def where(self, keep: Flags | Ints) -> FoundRelations:
        """The relations `keep` selects (flags or positions)."""
        return FoundRelations(self.rows[keep], self.levels[keep])


def microseconds(moment: datetime) -> int:
    """`moment` as integer microseconds since 1970, as the index keeps instants."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def instant(count: int) -> datetime:
    """The instant `count` microseconds after 1970 (in UTC): `microseconds` undone."""
    return _EPOCH + timedelta(microseconds=count)


@dataclass(frozen=True)
class _Bounds:
    """A window's instants; all None for an answer over every run (the Marquez graph)."""

    start: int | None
    end: int | None
    as_of: int | None

    @classmethod
    def of(cls, window: Window | None) -> _Bounds:
        if window is None:
            return cls(None, None, None)
        as_of = None if window.as_of is None else microseconds(window.as_of)
        return cls(microseconds(window.start), microseconds(window.end), as_of)

    def overlaps(self, runs: Ints, started: Ints, ended: Ints) -> Flags:
        """Rows without a run (declared) are in; a run's when its span overlaps the window
        and it had started by the `as_of` time (every run's without a window)."""
        if self.start is None or self.end is None:
            return np.ones(len(runs), dtype=np.bool_)
        inside = (started < self.end) & (ended >= self.start)
        if self.as_of is not None:
            inside &= started <= self.as_of
        found: Flags = (runs == NONE) | inside
        return found


class WalkView:
    """One walk's view of a graph version: the rows in force and in the window (every
    current row without one)."""

    def __init__(
        self, graph: Graph, window: Window | None, visible: VisibleNodes | None = None
    ) -> None:
        self.graph = graph
        self.bounds = _Bounds.of(window)
        self.visible = visible

    def in_force(self, table: Table, rows: Ints, of_run: Flags) -> Flags:
        """Which of `rows` an answer reads: current rows, or as of a time the runs' rows and
        the declarations then in force."""
        current = table["current"][rows]
        as_of = self.bounds.as_of
        if as_of is None:
            return current
        declared = (table["since"][rows] <= as_of) & (table["until"][rows] > as_of)
        return (current & of_run) | (~current & declared)

    def run_in_window(self, runs: Ints) -> Flags:
        started, ended = self.graph.spans(runs)
        return self.bounds.overlaps(runs, started, ended)

    def relations(self, by: Adjacency, nodes: Ints) -> tuple[Ints, Ints]:
        """The relations of `nodes` in force and in the window, and each one's node position."""
        rows, owner = by.rows_of(nodes)
        r = self.graph.relations
        keep = self.in_force(r, rows, r["run"][rows] != NONE) & self.run_in_window(r["run"][rows])
        return rows[keep], owner[keep]

    def flows(self, by: Adjacency, nodes: Ints) -> tuple[Ints, Ints]:
        """The flows of `nodes` with a job, in force and in the window."""
        rows, owner = self.all_flows(by, nodes)
        keep = self.graph.flows["job"][rows] != NONE
        return rows[keep], owner[keep]

    def all_flows(self, by: Adjacency, nodes: Ints) -> tuple[Ints, Ints]:
        """The flows of `nodes` in force and in the window, with a job or declared without."""
        rows, owner = by.rows_of(nodes)
        f = self.graph.flows
        runs = f["run"][rows]
        keep = self.in_force(f, rows, runs != NONE)
        keep &= self.bounds.overlaps(runs, f["started"][rows], f["ended"][rows])
        return rows[keep], owner[keep]

    def edges(self, near: str, nodes: Ints, far_type: int) -> tuple[Ints, Ints]:
        """The job-end edges whose `near` end (e.g. "target_dataset") is one of `nodes`
        and whose far end is of `far_type`, in force and in the window."""
        by = self.graph.edges_by[near]
        if by.empty:  # most stores have no job-end edge: ten levels asked twenty times
            return NO_ROWS, NO_ROWS
        rows, owner = by.rows_of(nodes)
        e = self.graph.edges
        far = "source" if near.startswith("target") else "target"
        keep = self.in_force(e, rows, e["of_run"][rows]) & (e[f"{far}_type"][rows] == far_type)
        keep &= self.run_in_window(e["run"][rows])
        return rows[keep], owner[keep]

    def live_datasets(self, ids: Ints) -> Flags:
        return ~self.graph.deleted(self.graph.deleted_datasets, ids)

    def live_jobs(self, ids: Ints) -> Flags:
        return ~self.graph.deleted(self.graph.deleted_jobs, ids)

    def passable_datasets(self, ids: Ints) -> Flags:
        """The datasets a walk may reach: live, and visible to the reader."""
        live = self.live_datasets(ids)
        return live if self.visible is None else live & self.visible.shows_datasets(ids)

    def passable_jobs(self, ids: Ints) -> Flags:
        live = self.live_jobs(ids)
        return live if self.visible is None else live & self.visible.shows_jobs(ids)

    def shown_relations(
        self, dataset: Ints, job: Ints, run: Ints, write: Ints | Flags | bool
    ) -> Flags:
        """Which relations (columns of equal length) have both ends live and visible; the
        live ones with a hidden end are counted as met (`VisibleNodes.stop_at`)."""
        live = self.live_datasets(dataset) & self.live_jobs(job)
        if self.visible is None:
            return live
        written = np.asarray(write, dtype=np.int64)
        return live & self.visible.stop_at(dataset, job, run, written, live)


def walk_relations(
    graph: Graph,
    seed: int,
    mode: Direction,
    levels: int,
    window: Window,
    visible: VisibleNodes | None = None,
) -> FoundRelations:
    """The relations a walk of `levels` levels from dataset number `seed` in `mode` shows,
    each with the level it is shown at, in no particular order; with `visible`, only
    through and between the nodes it shows, counting what it stopped at there."""
    return FoundRelations(*_relation_rows(WalkView(graph, window, visible), seed, mode, levels))


def relation_rows(graph: Graph, seed: int, mode: Direction, levels: int, window: Window) -> Ints:
    """The relations `walk_relations` shows, as distinct rows of (dataset, job, run, write,
    component) numbers without their levels: for a caller that collapses the runs before
    it names anything (a watched radius, which a long window gives thousands of runs)."""
    keys, _ = _relation_rows(WalkView(graph, window), seed, mode, levels)
    return keys


def _relation_rows(walk: WalkView, seed: int, mode: Direction, levels: int) -> tuple[Ints, Ints]:
    """The distinct relation rows a walk shows, each with its least level."""
    if mode == "both":
        keys, found_levels = _both(walk, seed, levels)
        return _least(list(keys.T), found_levels)
    return _directed(walk, seed, mode, levels)


@dataclass(frozen=True)
class RolledUpRelations:
    """What a walk with `rollup=workflow` shows, each relation with its level, and what it
    met: the jobs that stood for workflows and the datasets found temporary to a workflow
    run, each with the least level it was met at (ids as text)."""

    found: FoundRelations
    workflows: dict[str, int]
    temporary: dict[str, int]


def walk_rolled_up(
    graph: Graph, seed: int, mode: Direction, levels: int, window: Window
) -> RolledUpRelations:
    """The relations a walk as `walk_relations` shows, rolled up to workflows (design §4.2):
    the directed walk passes through a dataset temporary to the workflow run that made the
    step within the same level, following only that workflow run's flows; `both` reaches a
    workflow's datasets through the runs inside its runs."""
    walk = WalkView(graph, window)
    rollup = RollUp(graph.workflows, len(graph.ids.datasets), len(graph.ids.jobs))
    if mode == "both":
        keys, found_levels = _both_rolled_up(walk, seed, levels, rollup)
    else:
        keys, found_levels = _directed(walk, seed, mode, levels, rollup)
        keys, found_levels = rollup.rolled(keys, found_levels)
    datasets, jobs = graph.ids.datasets.texts, graph.ids.jobs.texts
    temporary, workflows = rollup.temporary_level, rollup.workflow_level
    return RolledUpRelations(
        found=FoundRelations(*_least(list(keys.T), found_levels)),
        workflows={jobs[j]: int(workflows[j]) for j in rollup.met(workflows, levels).tolist()},
        temporary={datasets[d]: int(temporary[d]) for d in rollup.met(temporary, levels).tolist()},
    )


def _shown_rows(walk: WalkView, rows: Ints) -> Flags:
    """Which relation rows have both ends live and visible (those met with a hidden end
    are counted)."""
    r = walk.graph.relations
    ends = [r[c][rows].astype(np.int64) for c in ("dataset", "job", "run", "write")]
    return walk.shown_relations(*ends)


def _new(depths: Ints, reached: Ints, depth: int) -> Ints:
    """The nodes of `reached` not reached before, now marked at `depth`."""
    # Those reached before left out first: most of a deep level's were, and only the
    # others are sorted.
    fresh = reached[reached != NONE]
    fresh = distinct(fresh[depths[fresh] == _UNREACHED])
    depths[fresh] = depth
    new: Ints = fresh
    return new


def _depths(size: int) -> Ints:
    return np.full(size + 1, _UNREACHED, dtype=np.int64)


def _both(walk: WalkView, seed: int, levels: int) -> tuple[Ints, Ints]:
    graph, r = walk.graph, walk.graph.relations
    datasets, jobs = _depths(len(graph.ids.datasets)), _depths(len(graph.ids.jobs))
    datasets[seed] = 0
    frontier = np.array([seed], dtype=np.int64)
    for depth in range(levels):
        rows, _ = walk.relations(graph.by_dataset, frontier)
        rows = rows[_shown_rows(walk, rows)]
        reached = r["job"][rows].astype(np.int64)
        new_jobs = _new(jobs, reached[walk.live_jobs(reached)], depth)
        if depth + 1 >= levels or not len(new_jobs):
            break
        rows, _ = walk.relations(graph.by_job, new_jobs)
        reached = r["dataset"][rows].astype(np.int64)
        frontier = _new(datasets, reached[walk.passable_datasets(reached)], depth + 1)
        if not len(frontier):
            break
    shown = np.flatnonzero(jobs[:-1] != _UNREACHED)
    rows, owner = walk.relations(graph.by_job, shown)
    keep = _shown_rows(walk, rows)
    rows, owner = rows[keep], owner[keep]
    keys = np.stack(
        [r[c][rows].astype(np.int64) for c in ("dataset", "job", "run", "write", "component")],
        axis=1,
    )
    return keys, jobs[shown][owner] + 1


def _both_rolled_up(walk: WalkView, seed: int, levels: int, rollup: RollUp) -> tuple[Ints, Ints]:
    """`both` rolled up, level by level: a dataset shows its relations as rolled up, which
    reach the jobs and workflows standing for their runs; a job (workflow) reached shows
    its own relations as rolled up that stay its own and, once some relation met so far
    stood for it as a workflow, those of the runs inside its runs in the window
    (`Workflows.members`), which reach the datasets of the next level."""
    graph = walk.graph
    datasets, programs = _depths(len(graph.ids.datasets)), _depths(len(graph.ids.jobs))
    datasets[seed] = 0
    frontier = np.array([seed], dtype=np.int64)
    every_run = np.arange(len(graph.workflows.run_job), dtype=np.int64)
    in_window = walk.run_in_window(every_run)
    parts: list[tuple[Ints, Ints]] = []

    def rolled(by: Adjacency, nodes: Ints, level: int) -> Ints:
        rows, _ = walk.relations(by, nodes)
        rows = rows[_live_rows(walk, rows)]
        keys, _ = rollup.rolled(_relation_keys(graph, rows), np.full(len(rows), level))
        return keys

    for depth in range(levels):
        if not len(frontier):
            break
        touching = rolled(graph.by_dataset, frontier, depth + 1)
        parts.append((touching, np.full(len(touching), depth + 1)))
        reached = _new(programs, touching[:, 1], depth)
        if not len(reached):
            break
        theirs = rolled(graph.by_job, reached, depth + 1)
        workflows = reached[rollup.workflow_level[reached] <= depth + 1]
        if len(workflows):
            members = graph.workflows.members(workflows, in_window)
            theirs = np.concatenate([theirs, rolled(graph.by_run, members, depth + 1)])
        theirs = theirs[programs[theirs[:, 1]] == depth]
        parts.append((theirs, np.full(len(theirs), depth + 1)))
        frontier = _new(datasets, theirs[:, 0], depth + 1)
    if not parts:
        return np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _live_rows(walk: WalkView, rows: Ints) -> Flags:
    r = walk.graph.relations
    live = walk.live_datasets(r["dataset"][rows].astype(np.int64))
    found: Flags = live & walk.live_jobs(r["job"][rows].astype(np.int64))
    return found


def _relation_keys(graph: Graph, rows: Ints) -> Ints:
    """Relation rows as (dataset, job, run, write, component) numbers."""
    r = graph.relations
    columns = ("dataset", "job", "run", "write", "component")
    return np.stack([r[c][rows].astype(np.int64) for c in columns], axis=1).reshape(-1, 5)


def _directed(
    walk: WalkView, seed: int, mode: Direction, levels: int, rollup: RollUp | None = None
) -> tuple[Ints, Ints]:
    """The relations (dataset, job, run, write, component) a directed walk shows, each with
    its level. With `rollup`, a step into a dataset temporary to the workflow run that made
    it leads to that dataset within the workflow run only (`_Passes`), at the same depth."""
    graph = walk.graph
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_write = mode == "upstream"
    r, f, e = graph.relations, graph.flows, graph.edges
    flows_by = graph.by_target if mode == "upstream" else graph.by_source
    datasets, jobs = _depths(len(graph.ids.datasets)), _depths(len(graph.ids.jobs))
    datasets[seed] = 0
    frontier = np.array([seed], dtype=np.int64)
    job_frontier = np.zeros(0, dtype=np.int64)
    passes = _Passes(walk, flows_by, far)
    # The flows of each level's datasets as read to step on, kept with the level they are
    # shown at: what the relations shown are made of. A frontier not stepped on from (the
    # last) is read after.
    flows_read: list[tuple[Ints, int]] = []
    pending, pending_level = frontier, 1
    for depth in range(levels):
        rows, _ = walk.edges(f"{near}_dataset", frontier, JOB)
        reached = e[f"{far}_job"][rows].astype(np.int64)
        fed = _new(jobs, reached[walk.passable_jobs(reached)], depth)
        job_frontier = np.union1d(job_frontier, fed)
        last = depth + 1 >= levels
        if last and rollup is None:
            break
        rows, _ = walk.flows(flows_by, frontier)
        flows_read.append((rows, depth + 1))
        pending = NO_ROWS
        rows = rows[walk.passable_jobs(f["job"][rows].astype(np.int64))]
        edge_rows, _ = walk.edges(f"{near}_job", job_frontier, DATASET)
        reached = np.concatenate(
            [f[far][rows].astype(np.int64), e[f"{far}_dataset"][edge_rows].astype(np.int64)]
        )
        runs = np.concatenate(
            [f["run"][rows].astype(np.int64), e[f"{near}_run"][edge_rows].astype(np.int64)]
        )
        keep = (reached != NONE) & walk.passable_datasets(reached)
        reached, runs = reached[keep], runs[keep]
        if rollup is not None:
            reached = passes.through(rollup, reached, runs, depth)
            if last:
                break
        rows, _ = walk.edges(f"{near}_job", job_frontier, JOB)
        next_jobs = e[f"{far}_job"][rows].astype(np.int64)
        frontier = _new(datasets, reached, depth + 1)
        pending, pending_level = frontier, depth + 2
        job_frontier = _new(jobs, next_jobs[walk.passable_jobs(next_jobs)], depth + 1)
        if not (len(frontier) or len(job_frontier)):
            break
    if len(pending):
        rows, _ = walk.flows(flows_by, pending)
        flows_read.append((rows, pending_level))
    dataset_nodes = np.flatnonzero(datasets[:-1] != _UNREACHED)
    job_nodes = np.flatnonzero(jobs[:-1] != _UNREACHED)
    dataset_levels = datasets[dataset_nodes] + 1
    parts: list[tuple[Ints, ...]] = []

    def add(dataset: Ints, job: Ints, run: Ints, write: bool | Flags, level: Ints) -> None:
        keep = walk.shown_relations(dataset, job, run, write)
        written = np.broadcast_to(np.asarray(write, dtype=np.int64), dataset.shape)
        parts.append(tuple(c[keep].astype(np.int64) for c in (dataset, job, run, written, level)))

    # The near relations: a frontier dataset's writers (readers, downstream).
    rows, owner = walk.relations(graph.by_dataset, dataset_nodes)
    mine = r["write"][rows] == near_write
    rows, owner = rows[mine], owner[mine]
    add(r["dataset"][rows], r["job"][rows], r["run"][rows], near_write, dataset_levels[owner])
    # Both ends of every flow into (out of) a dataset of the level.
    rows = np.concatenate([read for read, _ in flows_read])
    level = np.repeat([level for _, level in flows_read], [len(read) for read, _ in flows_read])
    ends = walk.live_datasets(f["source"][rows]) & walk.live_datasets(f["target"][rows])
    rows, level = rows[ends], level[ends]
    add(f["source"][rows], f["job"][rows], f["run"][rows], False, level)
    add(f["target"][rows], f["job"][rows], f["run"][rows], True, level)
    # A job-end edge into (out of) a dataset of the level: the job at its far end touches it.
    rows, owner = walk.edges(f"{near}_dataset", dataset_nodes, JOB)
    add(
        e[f"{near}_dataset"][rows],
        e[f"{far}_job"][rows],
        e[f"{far}_run"][rows],
        near_write,
        dataset_levels[owner],
    )
    # A job-end edge from a job of the level to a dataset: the job touches that dataset.
    rows, owner = walk.edges(f"{near}_job", job_nodes, DATASET)
    present = e[f"{far}_dataset"][rows] != NONE
    rows, owner = rows[present], owner[present]
    add(
        e[f"{far}_dataset"][rows],
        e[f"{near}_job"][rows],
        e[f"{near}_run"][rows],
        not near_write,
        jobs[job_nodes][owner] + 1,
    )
    # A dataset passed through within a workflow run: its rows of that workflow run only.
    for through, links, depth in passes.found:
        assert rollup is not None, "a walk passes through datasets only when it rolls up"
        level = np.full(len(through), depth + 1, dtype=np.int64)
        rows, owner = walk.relations(graph.by_dataset, through)
        mine = r["write"][rows] == near_write
        mine &= rollup.links(r["run"][rows].astype(np.int64)) == links[owner]
        rows, owner = rows[mine], owner[mine]
        add(r["dataset"][rows], r["job"][rows], r["run"][rows], near_write, level[owner])
        rows, owner = walk.flows(flows_by, through)
        mine = rollup.links(f["run"][rows].astype(np.int64)) == links[owner]
        mine &= walk.live_datasets(f["source"][rows]) & walk.live_datasets(f["target"][rows])
        rows, owner = rows[mine], owner[mine]
        add(f["source"][rows], f["job"][rows], f["run"][rows], False, level[owner])
        add(f["target"][rows], f["job"][rows], f["run"][rows], True, level[owner])
    columns = [np.concatenate([part[i] for part in parts]) for i in range(5)]
    return _with_components(walk, columns[:4], columns[4])


class _Passes:
    """The datasets a rolled-up directed walk passes through, each within one workflow run,
    with the depth it passed at. A step made by a run inside workflow run W into a dataset
    temporary to W (`RollUp.passing`) does not make it a node of the next depth: the walk
    goes on from it at the same depth along W's flows only, until it leaves W's temporaries;
    where it leaves them are the datasets of the next depth."""

    def __init__(self, walk: WalkView, flows_by: Adjacency, far: str) -> None:
        self.walk, self.flows_by, self.far = walk, flows_by, far
        self.found: list[tuple[Ints, Ints, int]] = []
        self._seen: set[tuple[int, int]] = set()

    def through(self, rollup: RollUp, reached: Ints, runs: Ints, depth: int) -> Ints:
        """Of the datasets `reached` by steps the `runs` made, those of the next depth;
        the others are passed through (noted in `found`) and what that reaches is added."""
        f = self.walk.graph.flows
        onward = [reached]
        while len(reached):
            links = rollup.links(runs)
            passing = rollup.passing(reached, runs)
            onward[-1] = reached[~passing]
            pairs = {
                pair
                for pair in zip(reached[passing].tolist(), links[passing].tolist(), strict=True)
                if pair not in self._seen
            }
            if not pairs:
                break
            self._seen |= pairs
            through = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
            self.found.append((through[:, 0], through[:, 1], depth))
            rows, owner = self.walk.flows(self.flows_by, through[:, 0])
            runs = f["run"][rows].astype(np.int64)
            far = f[self.far][rows].astype(np.int64)
            keep = rollup.links(runs) == through[owner, 1]
            keep &= self.walk.passable_jobs(f["job"][rows].astype(np.int64))
            keep &= self.walk.passable_datasets(far)
            reached, runs = far[keep], runs[keep]
            onward.append(reached)
        found: Ints = np.concatenate(onward)
        return found


def distinct(values: Ints) -> Ints:
    """The distinct `values`, sorted: `np.unique` as it was before numpy 2.3, which first
    builds a hash table of the values and then sorts what it holds, twenty times the cost
    of one sort for the tens of thousands of numbers of a walk. A stable sort (timsort),
    because a walk's numbers come in long sorted runs (concatenated adjacency rows), which
    it merges: a third of the default quicksort's time on them."""
    ordered = np.sort(values, axis=None, kind="stable")
    keep = np.ones(len(ordered), dtype=np.bool_)
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    found: Ints = ordered[keep]
    return found


#: `distinct_numbers` sorts the numbers when they are fewer than the index's size divided by
#: this; flags over the whole index cost more then (measured: sorting 200 numbers takes a
#: third of the flags over 22,000 runs, 2,000 numbers twice as long).
_FLAGS_PER_NUMBER = 32


def distinct_numbers(numbers: Ints, size: int) -> tuple[Ints, Ints]:
    """The distinct `numbers` (each below `size`, or NONE), sorted, and each one's place
    among them (NONE stays NONE). Flags over `size` find them in linear time, a third of a
    sort's (`np.unique`) for the 18,000 relations of a walk; a few numbers, as a one-level
    answer names, are sorted instead, so that answer does not cost in proportion to the
    index (flags over a million runs take milliseconds)."""
    if len(numbers) * _FLAGS_PER_NUMBER < size:
        present = numbers != NONE
        found = distinct(numbers[present])
        at: Ints = np.searchsorted(found, numbers)
        at[~present] = NONE
        return found.astype(np.int64), at
    seen = np.zeros(size + 1, dtype=np.bool_)
    seen[numbers] = True  # NONE flags the last place, which no number holds
    seen[-1] = False
    found = np.flatnonzero(seen)
    place_of = np.cumsum(seen) - 1
    place_of[-1] = NONE
    places: Ints = place_of[numbers]
    return found.astype(np.int64), places


def distinct_rows(keys: Ints) -> tuple[Ints, Ints]:
    """The distinct rows of `keys`, in the order of their columns (the first column first),
    and for each row of `keys` the number of its distinct row. The columns are packed into
    one integer where their ranges allow, which sorts several times faster than a sort by
    the columns (`np.unique(axis=0)`, which sorts rows as opaque bytes, is slower still)."""
    if not len(keys):
        return keys, np.zeros(0, dtype=np.int64)
    packed = _packed(keys)
    if packed is not None:
        # Equal packed values are equal rows, so any row of each stands for it: no stable
        # sort for the first one (`return_index`), which costs many times the sort itself.
        distinct, inverse = np.unique(packed, return_inverse=True)
        inverse = inverse.reshape(-1)
        some = np.empty(len(distinct), dtype=np.int64)
        some[inverse] = np.arange(len(keys))
        return keys[some], inverse
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    starts = np.ones(len(keys), dtype=np.bool_)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def _packed(keys: Ints) -> Ints | None:
    """Each row of `keys` as one integer, ordered as the rows are (the first column first),
    or None when their ranges need more than 62 bits."""
    # Column by column: a reduction along the rows of a narrow array is ten times slower.
    low = [int(keys[:, c].min()) for c in range(keys.shape[1])]
    widths = [int(keys[:, c].max()) - low[c] + 1 for c in range(keys.shape[1])]
    if math.prod(widths) >= 2**62:
        return None
    packed = np.zeros(len(keys), dtype=np.int64)
    for column, width in enumerate(widths):
        packed *= width
        packed += keys[:, column] - low[column]
    return packed


def _least(columns: Sequence[Ints], levels: Ints) -> tuple[Ints, Ints]:
    """Each distinct row of the key `columns` with the least of its `levels`, as rows in
    the order of their columns (as `distinct_rows` gives them)."""
    if not len(levels):
        return np.zeros((0, len(columns)), dtype=np.int64), levels
    every = (*columns, levels)
    low = [int(column.min()) for column in every]
    widths = [int(column.max()) - lowest + 1 for column, lowest in zip(every, low, strict=True)]
    if math.prod(widths) < 2**62:
        # Each row and its level packed into one integer, the level last: sorted, each
        # key's first value holds its least level, and the kept values are the rows. One
        # sort of the values, where numbering the keys and a minimum per key
        # (`np.minimum.at`) cost four times as much, and sorting positions twice. Stable,
        # as in `distinct`: the parts come in sorted runs.
        packed = np.zeros(len(levels), dtype=np.int64)
        for column, lowest, width in zip(every, low, widths, strict=True):
            packed *= width
            packed += column - lowest
        packed.sort(kind="stable")
        key_of = packed // widths[-1]
        first = np.ones(len(packed), dtype=np.bool_)
        np.not_equal(key_of[1:], key_of[:-1], out=first[1:])
        kept = packed[first]
        found = np.empty((len(kept), len(widths)), dtype=np.int64)
        for place in range(len(widths) - 1, -1, -1):
            # A floor division by a number numpy divides fast; `np.divmod` does not.
            rest = kept // widths[place]
            found[:, place] = kept - rest * widths[place] + low[place]
            kept = rest
        return found[:, :-1], found[:, -1].copy()
    distinct, inverse = distinct_rows(np.stack(columns, axis=1))
    least = np.full(len(distinct), _UNREACHED, dtype=np.int64)
    np.minimum.at(least, inverse, levels)
    return distinct, least


def _with_components(walk: WalkView, columns: list[Ints], levels: Ints) -> tuple[Ints, Ints]:
    """Each (dataset, job, run, write) key with every component stored on it in force (in
    any window), or "" when none is: rows (dataset, job, run, write, component)."""
    graph, r = walk.graph, walk.graph.relations
    keys, levels = _least(columns, levels)
    if not len(keys):
        return np.zeros((0, 5), dtype=np.int64), levels
    rows = np.zeros(0, dtype=np.int64)
    if graph.names_components:
        rows, _ = graph.by_dataset.rows_of(distinct(keys[:, 0]))
        rows = rows[walk.in_force(r, rows, r["run"][rows] != NONE)]
    if not np.any(r["component"][rows] != UNNAMED):
        # No component named on these datasets (most stores name none): every key's is "".
        return np.concatenate([keys, np.full((len(keys), 1), UNNAMED)], axis=1), levels
    stored = np.stack(
        [r[c][rows].astype(np.int64) for c in ("dataset", "job", "run", "write")], axis=1
    )
    every, inverse = distinct_rows(np.concatenate([keys, stored]))
    key_ids, stored_ids = inverse[: len(keys)], inverse[len(keys) :]
    named, _ = distinct_rows(np.stack([stored_ids, r["component"][rows].astype(np.int64)], axis=1))
    by_key = Adjacency(named[:, 0].astype(np.int32), len(every))
    found, owner = by_key.rows_of(key_ids)
    with_stored = np.concatenate([keys[owner], named[found, 1:2]], axis=1)
    bare = np.bincount(owner, minlength=len(keys)) == 0
    without = np.concatenate([keys[bare], np.full((int(bare.sum()), 1), UNNAMED)], axis=1)
    return (
        np.concatenate([with_stored, without]),
        np.concatenate([levels[owner], levels[bare]]),
    )
