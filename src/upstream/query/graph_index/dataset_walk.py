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

A reader limited to some namespaces (`VisibleNodes`) is walked as if the nodes it may not
see were not there: no walk passes through one, no relation with one is shown, and each such
relation the walk met is counted (`upstream.query.graph_index.visibility`).

A relation keeps its least level. Its components are those stored on its (dataset, job, run,
access), or "" when none is. Nothing deleted is passed through or shown; a run's rows count
when the run overlaps the window and had started by its `as_of` time; declarations are those
in force then (design §4.1, §4.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Direction
from upstream.model.window import Window
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.graph import DATASET, JOB, Graph, Table
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
_UNREACHED = np.iinfo(np.int64).max
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ShownRelation(NamedTuple):
    """A relation as an answer shows it: job `job_id` read or wrote dataset `dataset_id` in
    run `run_id` (None: declared) through `component` ("" when unnamed), ids as their
    hyphenated text."""

    dataset_id: str
    job_id: str
    run_id: str | None
    access: str
    component: str

    @property
    def sort_key(self) -> tuple[str, str, str, str, str]:
        """A stable order: the ids' fixed-width text orders as their numbers do; a
        declared relation (no run) comes first."""
        return (self.dataset_id, self.job_id, self.run_id or "", self.access, self.component)


def microseconds(moment: datetime) -> int:
    """`moment` as integer microseconds since 1970, as the index keeps instants."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True)
class _Bounds:
    start: int
    end: int
    as_of: int | None

    @classmethod
    def of(cls, window: Window) -> _Bounds:
        as_of = None if window.as_of is None else microseconds(window.as_of)
        return cls(microseconds(window.start), microseconds(window.end), as_of)

    def overlaps(self, runs: Ints, started: Ints, ended: Ints) -> Flags:
        """Rows without a run (declared) are in; a run's when its span overlaps the window
        and it had started by the `as_of` time."""
        inside = (started < self.end) & (ended >= self.start)
        if self.as_of is not None:
            inside &= started <= self.as_of
        found: Flags = (runs == NONE) | inside
        return found


class WalkView:
    """One walk's view of a graph version: the rows in force and in the window."""

    def __init__(self, graph: Graph, window: Window, visible: VisibleNodes | None = None) -> None:
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
        rows, owner = by.rows_of(nodes)
        f = self.graph.flows
        runs = f["run"][rows]
        keep = self.in_force(f, rows, runs != NONE) & (f["job"][rows] != NONE)
        keep &= self.bounds.overlaps(runs, f["started"][rows], f["ended"][rows])
        return rows[keep], owner[keep]

    def edges(self, near: str, nodes: Ints, far_type: int) -> tuple[Ints, Ints]:
        """The job-end edges whose `near` end (e.g. "target_dataset") is one of `nodes`
        and whose far end is of `far_type`, in force and in the window."""
        rows, owner = self.graph.edges_by[near].rows_of(nodes)
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
) -> dict[ShownRelation, int]:
    """The relations a walk of `levels` levels from dataset number `seed` in `mode` shows,
    each with the level it is shown at, in no particular order; with `visible`, only
    through and between the nodes it shows, counting what it stopped at there."""
    walk = WalkView(graph, window, visible)
    if mode == "both":
        return _both(walk, seed, levels)
    return _directed(walk, seed, mode, levels)


def _shown_rows(walk: WalkView, rows: Ints) -> Flags:
    """Which relation rows have both ends live and visible (those met with a hidden end
    are counted)."""
    r = walk.graph.relations
    ends = [r[c][rows].astype(np.int64) for c in ("dataset", "job", "run", "write")]
    return walk.shown_relations(*ends)


def _new(depths: Ints, reached: Ints, depth: int) -> Ints:
    """The nodes of `reached` not reached before, now marked at `depth`."""
    fresh = np.unique(reached[reached != NONE])
    fresh = fresh[depths[fresh] == _UNREACHED]
    depths[fresh] = depth
    new: Ints = fresh
    return new


def _depths(size: int) -> Ints:
    return np.full(size + 1, _UNREACHED, dtype=np.int64)


def _both(walk: WalkView, seed: int, levels: int) -> dict[ShownRelation, int]:
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
    return _least_levels(graph, keys, jobs[shown][owner] + 1)


def _directed(walk: WalkView, seed: int, mode: Direction, levels: int) -> dict[ShownRelation, int]:
    graph = walk.graph
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_write = mode == "upstream"
    r, f, e = graph.relations, graph.flows, graph.edges
    flows_by = graph.by_target if mode == "upstream" else graph.by_source
    datasets, jobs = _depths(len(graph.ids.datasets)), _depths(len(graph.ids.jobs))
    datasets[seed] = 0
    frontier = np.array([seed], dtype=np.int64)
    job_frontier = np.zeros(0, dtype=np.int64)
    for depth in range(levels):
        rows, _ = walk.edges(f"{near}_dataset", frontier, JOB)
        reached = e[f"{far}_job"][rows].astype(np.int64)
        fed = _new(jobs, reached[walk.passable_jobs(reached)], depth)
        job_frontier = np.union1d(job_frontier, fed)
        if depth + 1 >= levels:
            break
        rows, _ = walk.flows(flows_by, frontier)
        live = walk.passable_jobs(f["job"][rows].astype(np.int64))
        next_datasets = [f[far][rows][live].astype(np.int64)]
        rows, _ = walk.edges(f"{near}_job", job_frontier, DATASET)
        next_datasets.append(e[f"{far}_dataset"][rows].astype(np.int64))
        rows, _ = walk.edges(f"{near}_job", job_frontier, JOB)
        next_jobs = e[f"{far}_job"][rows].astype(np.int64)
        reached = np.concatenate(next_datasets)
        reached = reached[(reached != NONE) & walk.passable_datasets(reached)]
        frontier = _new(datasets, reached, depth + 1)
        job_frontier = _new(jobs, next_jobs[walk.passable_jobs(next_jobs)], depth + 1)
        if not (len(frontier) or len(job_frontier)):
            break
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
    rows, owner = walk.flows(flows_by, dataset_nodes)
    level = dataset_levels[owner]
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
    columns = [np.concatenate([part[i] for part in parts]) for i in range(5)]
    keys, levels_of = np.stack(columns[:4], axis=1), columns[4]
    return _with_components(walk, keys, levels_of)


def _distinct_rows(keys: Ints) -> tuple[Ints, Ints]:
    """The distinct rows of `keys` and, for each row of `keys`, the number of its distinct
    row: `np.unique(axis=0)` sorts the rows as opaque bytes, several times slower than a
    sort by the columns."""
    if not len(keys):
        return keys, np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    starts = np.ones(len(keys), dtype=np.bool_)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def _least(keys: Ints, levels: Ints) -> tuple[Ints, Ints]:
    """Each distinct row of `keys` with the least of its `levels`."""
    if not len(keys):
        return keys, levels
    distinct, inverse = _distinct_rows(keys)
    least = np.full(len(distinct), _UNREACHED, dtype=np.int64)
    np.minimum.at(least, inverse, levels)
    return distinct, least


def _with_components(walk: WalkView, keys: Ints, levels: Ints) -> dict[ShownRelation, int]:
    """Each (dataset, job, run, write) key with every component stored on it in force (in
    any window), or "" when none is."""
    graph, r = walk.graph, walk.graph.relations
    keys, levels = _least(keys, levels)
    if not len(keys):
        return {}
    rows, _ = graph.by_dataset.rows_of(np.unique(keys[:, 0]))
    rows = rows[walk.in_force(r, rows, r["run"][rows] != NONE)]
    stored = np.stack(
        [r[c][rows].astype(np.int64) for c in ("dataset", "job", "run", "write")], axis=1
    )
    every, inverse = _distinct_rows(np.concatenate([keys, stored]))
    key_ids, stored_ids = inverse[: len(keys)], inverse[len(keys) :]
    named, _ = _distinct_rows(np.stack([stored_ids, r["component"][rows].astype(np.int64)], axis=1))
    by_key = Adjacency(named[:, 0].astype(np.int32), len(every))
    found, owner = by_key.rows_of(key_ids)
    with_stored = np.concatenate([keys[owner], named[found, 1:2]], axis=1)
    bare = np.bincount(owner, minlength=len(keys)) == 0
    without = np.concatenate([keys[bare], np.zeros((int(bare.sum()), 1), dtype=np.int64)], axis=1)
    return _shown(
        graph,
        np.concatenate([with_stored, without]),
        np.concatenate([levels[owner], levels[bare]]),
    )


def _least_levels(graph: Graph, keys: Ints, levels: Ints) -> dict[ShownRelation, int]:
    distinct, least = _least(keys, levels)
    return _shown(graph, distinct, least)


def _shown(graph: Graph, keys: Ints, levels: Ints) -> dict[ShownRelation, int]:
    """Rows of (dataset, job, run, write, component) numbers as the relations answers show."""
    datasets, jobs = graph.ids.datasets.texts, graph.ids.jobs.texts
    runs, components = graph.ids.runs.texts, graph.ids.components.texts
    return {
        ShownRelation(
            datasets[dataset],
            jobs[job],
            None if run == NONE else runs[run],
            "write" if write else "read",
            components[component],
        ): level
        for (dataset, job, run, write, component), level in zip(
            keys.tolist(), levels.tolist(), strict=True
        )
    }
