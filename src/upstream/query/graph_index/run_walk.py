"""Run lineage's walk (`GET /v3/runs/{runId}/lineage`, design §4.5) on the graph index.

A run R that read dataset D read the version of D that one run W wrote: the version the
producer named in R's read (the latest write, by event time then run id, that named the same
version), else the latest run that wrote D and completed no later than R started (by end,
then run id). Upstream, each run's reads lead to their writers; downstream, a run's writes
lead to the runs whose reads resolve to it. Only runs' own current relations count: declared
lineage has no run and no version, and nothing deleted is left out (a run's history is a
fact, whatever was deleted since).

A reader limited to some namespaces (`VisibleNodes`; a run is visible when its job is) is
walked so that nothing hidden is shown or passed through (design §5): a read or write of a
hidden dataset, and a read by a hidden run, is met and counted, never shown; a read whose
version a hidden run wrote is shown with its writer unknown (the walk stops there), and that
write is counted. Which version was read is decided on every run, hidden ones included, so
a shown writer is the true one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Step
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.graph import NO_END, NO_START, Graph
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes

Ints = npt.NDArray[np.int64]


class RunLink(NamedTuple):
    """`reader` read the version of `dataset` that `writer` wrote (None: no run we know of
    wrote the version it read), `level` steps from the queried run; ids as text."""

    reader: str
    dataset: str
    writer: str | None
    level: int


class _Read(NamedTuple):
    run: int
    dataset: int
    version: int
    job: int


def run_links(
    graph: Graph,
    seed: str,
    direction: Step,
    levels: int,
    as_of: int | None,
    visible: VisibleNodes | None = None,
) -> set[RunLink]:
    """Every link `levels` steps at most from run `seed` in `direction`, each at its nearest
    level; downstream only readers that had started by `as_of` (microseconds) count. With
    `visible`, only through and between what it shows, counting what it met there."""
    number = graph.ids.runs.known(seed)
    if number is None:
        return set()
    walk = _RunWalk(graph, visible)
    if direction == "upstream":
        found = walk.upstream(number, levels)
    else:
        found = walk.downstream(number, levels, as_of)
    runs, datasets = graph.ids.runs.texts, graph.ids.datasets.texts
    return {
        RunLink(runs[reader], datasets[dataset], None if writer == NONE else runs[writer], level)
        for reader, dataset, writer, level in found
    }


class _RunWalk:
    def __init__(self, graph: Graph, visible: VisibleNodes | None = None) -> None:
        self.graph = graph
        self.visible = visible
        self.writers: dict[int, _Writers] = {}

    def shown(self, dataset: int, job: int, run: int, write: bool) -> bool:
        """Whether the relation (dataset, job, run, access) has both ends visible; one
        with a hidden end is counted as met."""
        if self.visible is None:
            return True
        if self.visible.datasets[dataset] and self.visible.jobs[job]:
            return True  # the common case, without making arrays
        d, j, r, w = (np.array([value], dtype=np.int64) for value in (dataset, job, run, write))
        return bool(self.visible.stop_at(d, j, r, w, np.ones(1, dtype=np.bool_))[0])

    def upstream(self, seed: int, levels: int) -> list[tuple[int, int, int, int]]:
        links: list[tuple[int, int, int, int]] = []
        reached = {seed}
        frontier = [seed]
        for level in range(1, levels + 1):
            following: list[int] = []
            for read in self.rows(self.graph.by_run, frontier, write=False):
                if not self.shown(read.dataset, read.job, read.run, False):
                    continue
                writer = self.writer_of(read)
                if writer != NONE:
                    job = self.writers[read.dataset].jobs[writer]
                    if not self.shown(read.dataset, job, writer, True):
                        writer = NONE
                links.append((read.run, read.dataset, writer, level))
                if writer != NONE and writer not in reached:
                    reached.add(writer)
                    following.append(writer)
            if not following:
                break
            frontier = following
        return links

    def downstream(
        self, seed: int, levels: int, as_of: int | None
    ) -> list[tuple[int, int, int, int]]:
        started = self.graph.run_started
        links: list[tuple[int, int, int, int]] = []
        reached = {seed}
        frontier = [seed]
        for level in range(1, levels + 1):
            following: list[int] = []
            for writer in frontier:
                datasets = {
                    w.dataset
                    for w in self.rows(self.graph.by_run, [writer], write=True)
                    if self.shown(w.dataset, w.job, w.run, True)
                }
                for read in self.rows(self.graph.by_dataset, sorted(datasets), write=False):
                    if read.run == writer:
                        continue
                    if as_of is not None and not started[read.run] <= as_of:
                        continue
                    if self.writer_of(read) != writer:
                        continue
                    if not self.shown(read.dataset, read.job, read.run, False):
                        continue
                    links.append((read.run, read.dataset, writer, level))
                    if read.run not in reached:
                        reached.add(read.run)
                        following.append(read.run)
            if not following:
                break
            frontier = following
        return links

    def rows(self, by: Adjacency, nodes: list[int], *, write: bool) -> Iterator[_Read]:
        """The current relations of runs with one access, keyed by `nodes` (runs or
        datasets)."""
        r = self.graph.relations
        rows, _ = by.rows_of(np.array(nodes, dtype=np.int64))
        keep = r["current"][rows] & (r["write"][rows] == write) & (r["run"][rows] != NONE)
        rows = rows[keep]
        for run, dataset, version, job in zip(
            *(r[c][rows].tolist() for c in ("run", "dataset", "version", "job")), strict=True
        ):
            yield _Read(run, dataset, version, job)

    def writer_of(self, read: _Read) -> int:
        """The run that wrote the version `read` read (NONE: none known)."""
        writers = self.writers.get(read.dataset)
        if writers is None:
            writers = self.writers[read.dataset] = _Writers(self.graph, read.dataset)
        return writers.of(read)


class _Writers:
    """The writes of one dataset, ordered for the two rules."""

    def __init__(self, graph: Graph, dataset: int) -> None:
        r = graph.relations
        runs = graph.ids.runs.texts
        rows, _ = graph.by_dataset.rows_of(np.array([dataset], dtype=np.int64))
        rows = rows[r["current"][rows] & r["write"][rows] & (r["run"][rows] != NONE)]
        #: Per named version, its writes newest first: (event time, run id) descending.
        self.named: dict[int, list[int]] = {}
        #: The job of each writing run.
        self.jobs: dict[int, int] = {}
        columns = ("run", "version", "event_time", "job")
        writes = zip(*(r[c][rows].tolist() for c in columns), strict=True)
        by_version: dict[int, list[tuple[int, str, int]]] = {}
        completed: set[int] = set()
        for run, version, event_time, job in writes:
            self.jobs[run] = job
            if version != NONE:
                by_version.setdefault(version, []).append((event_time, runs[run], run))
            if graph.run_completed[run] and graph.run_ended[run] != NO_END:
                completed.add(run)
        for version, named in by_version.items():
            self.named[version] = [run for *_, run in sorted(named, reverse=True)]
        #: The completed writing runs by (end, run id), ascending.
        ordered = sorted((int(graph.run_ended[run]), runs[run], run) for run in completed)
        self.ends = [end for end, *_ in ordered]
        self.runs = [run for *_, run in ordered]
        self.started = graph.run_started

    def of(self, read: _Read) -> int:
        for run in self.named.get(read.version, ()) if read.version != NONE else ():
            if run != read.run:
                return run
        started = int(self.started[read.run])
        if started == NO_START:
            return NONE
        place = bisect.bisect_right(self.ends, started) - 1
        while place >= 0 and self.runs[place] == read.run:
            place -= 1
        return self.runs[place] if place >= 0 else NONE
