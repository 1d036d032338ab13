"""The Marquez lineage graph's walk (`GET /api/v1/lineage`, design §4.4), on the graph index.

Each direction crosses one job per level, downstream first, then upstream:

- from a dataset, the jobs that read (downstream) or wrote (upstream) it, and through the
  flows out of (into) it the datasets they really went to (came from), with the flows' jobs;
- from a whole job (the seed, or one a job -> job edge led to), every dataset it wrote
  (read);
- from every job met, the jobs its job -> job edges lead to (come from).

A direction expands a node once. Nodes join the graph in a fixed order — within a step the
near relations, the flows, the whole jobs' relations and the job -> job edges, each sorted by
the ids as the store sorts them — so a graph cut at `max_nodes` keeps the first nodes met,
the same on every call: the nodes a walk that stops adding at the cap would hold.

A reader limited to some namespaces (`VisibleNodes`) is walked as if the nodes it may not
see were not there: a relation, flow or job -> job edge is followed only to a visible node,
and each one met with a hidden end is counted as a relation with it (a flow: its near
relation when its job is hidden, else its far one), never named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Step
from upstream.model.window import Window
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.dataset_walk import WalkView
from upstream.query.graph_index.graph import JOB, Graph
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes

Ints = npt.NDArray[np.int64]
DIRECTIONS: tuple[Step, ...] = ("downstream", "upstream")


@dataclass(frozen=True)
class MarquezGraph:
    """The nodes of the graph (ids as text), whether the cap cut it, and the rows between
    its nodes that its edges are drawn from."""

    datasets: set[str]
    jobs: set[str]
    truncated: bool
    #: (dataset, job, access) of the relations in the window between nodes of the graph.
    relations: set[tuple[str, str, str]]
    #: (source, target, job or None) of the flows between nodes of the graph.
    flows: set[tuple[str, str, str | None]]
    #: (source job, target job) of the job -> job edges between nodes of the graph.
    job_links: set[tuple[str, str]]


@dataclass
class _Direction:
    """One direction's walk: what it expands next, and what it has expanded."""

    step: Step
    seen_datasets: npt.NDArray[np.bool_]
    seen_jobs: npt.NDArray[np.bool_]
    datasets: Ints = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    jobs: Ints = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __bool__(self) -> bool:
        return bool(len(self.datasets) or len(self.jobs))

    def reach(self, datasets: Ints, jobs: Ints) -> None:
        """The next frontier: the nodes of `datasets` and `jobs` this direction has not
        expanded yet."""
        datasets = np.unique(datasets)
        self.datasets = datasets[~self.seen_datasets[datasets]]
        self.seen_datasets[self.datasets] = True
        jobs = np.unique(jobs)
        self.jobs = jobs[~self.seen_jobs[jobs]]
        self.seen_jobs[self.jobs] = True


def marquez_graph(
    graph: Graph,
    seed_kind: str,
    seed_id: str,
    depth: int,
    max_nodes: int,
    window: Window | None,
    visible: VisibleNodes | None = None,
) -> MarquezGraph:
    """The graph around the dataset or job `seed_id`, `depth` jobs deep each way, over the
    runs of `window` (every run without one), at most `max_nodes` nodes; with `visible`,
    only through and between the nodes it shows, counting what it stopped at there."""
    return _Walk(graph, window, visible).run(seed_kind, seed_id, depth, max_nodes)


class _Walk:
    def __init__(
        self, graph: Graph, window: Window | None, visible: VisibleNodes | None = None
    ) -> None:
        self.graph = graph
        self.visible = visible
        self.view = WalkView(graph, window, visible)
        self.dataset_count = len(graph.ids.datasets) + 1
        self.job_count = len(graph.ids.jobs) + 1
        #: Nodes in the order they joined the graph, each as 2 * number (+ 1 for a job).
        self.order: list[int] = []
        self.member = np.zeros(2 * max(self.dataset_count, self.job_count), dtype=np.bool_)

    def run(self, seed_kind: str, seed_id: str, depth: int, max_nodes: int) -> MarquezGraph:
        numbering = self.graph.ids.datasets if seed_kind == "dataset" else self.graph.ids.jobs
        seed = numbering.known(seed_id)
        if seed is None:  # no row names it: the graph is the node alone
            alone = {seed_id} if max_nodes >= 1 else set()
            nothing: set[str] = set()
            shown = (alone, nothing) if seed_kind == "dataset" else (nothing, alone)
            return MarquezGraph(*shown, max_nodes < 1, set(), set(), set())
        directions = []
        for step in DIRECTIONS:
            walk = _Direction(
                step,
                np.zeros(self.dataset_count + 1, dtype=np.bool_),
                np.zeros(self.job_count + 1, dtype=np.bool_),
            )
            one = np.array([seed], dtype=np.int64)
            none = np.zeros(0, dtype=np.int64)
            walk.reach(*((one, none) if seed_kind == "dataset" else (none, one)))
            directions.append(walk)
        self.add(np.array([2 * seed + (seed_kind == "job")], dtype=np.int64))
        for _ in range(depth):
            if not any(directions) or len(self.order) > max_nodes:
                break
            for walk in directions:
                self.step(walk)
        kept = self.order[:max_nodes]
        datasets = np.array([n // 2 for n in kept if n % 2 == 0], dtype=np.int64)
        jobs = np.array([n // 2 for n in kept if n % 2 == 1], dtype=np.int64)
        return self.between(datasets, jobs, truncated=len(self.order) > max_nodes)

    def add(self, nodes: Ints) -> None:
        """Put `nodes` in the graph in their order, each once."""
        _, first = np.unique(nodes, return_index=True)
        met = nodes[np.sort(first)]
        new = met[~self.member[met]]
        self.member[new] = True
        self.order.extend(new.tolist())

    def step(self, walk: _Direction) -> None:
        """Cross one job level in `walk`'s direction."""
        if not walk:
            return
        graph, view = self.graph, self.view
        r, f, e = graph.relations, graph.flows, graph.edges
        downstream = walk.step == "downstream"
        met: list[Ints] = []
        # The jobs that read (wrote) the frontier's datasets.
        rows = self._relations(graph.by_dataset, walk.datasets, write=not downstream)
        rows = rows[self._sorted(r["dataset"][rows], r["job"][rows])]
        near_jobs = r["job"][rows].astype(np.int64)
        met.append(2 * near_jobs + 1)
        # The flows out of (into) them: each flow's job, then the dataset at its far end.
        rows, _ = view.all_flows(graph.by_source if downstream else graph.by_target, walk.datasets)
        source, target, job = (f[c][rows].astype(np.int64) for c in ("source", "target", "job"))
        live = view.live_datasets(source) & view.live_datasets(target) & view.live_jobs(job)
        if downstream:
            live &= self._shown_flows(source, target, job, f["run"][rows], live, downstream)
        else:
            live &= self._shown_flows(target, source, job, f["run"][rows], live, downstream)
        source, target, job = source[live], target[live], job[live]
        order = np.lexsort(
            (self._job_places(job), self._dataset_places(target), self._dataset_places(source))
        )
        source, target, job = source[order], target[order], job[order]
        far = target if downstream else source
        pairs = np.stack([np.where(job == NONE, -1, 2 * job + 1), 2 * far], axis=1).ravel()
        met.append(pairs[pairs >= 0])
        flow_jobs = job[job != NONE]
        # Every dataset the whole jobs wrote (read).
        rows = self._relations(graph.by_job, walk.jobs, write=downstream)
        rows = rows[self._sorted(r["dataset"][rows], r["job"][rows])]
        written = r["dataset"][rows].astype(np.int64)
        met.append(2 * written)
        # Job -> job edges from (to) every job met.
        near = "source" if downstream else "target"
        jobs = np.unique(np.concatenate([walk.jobs, near_jobs, flow_jobs]))
        rows, _ = view.edges(f"{near}_job", jobs, JOB)
        sources, targets = (
            e[f"{side}_job"][rows].astype(np.int64) for side in ("source", "target")
        )
        live = view.live_jobs(sources) & view.live_jobs(targets)
        if self.visible is not None:
            far_jobs = targets if downstream else sources
            no_dataset = np.full(len(far_jobs), NONE, dtype=np.int64)
            runs = e["run"][rows].astype(np.int64)
            reads = np.zeros(len(far_jobs), dtype=np.int64)
            live &= self.visible.stop_at(no_dataset, far_jobs, runs, reads, live)
        sources, targets = sources[live], targets[live]
        order = np.lexsort((self._job_places(targets), self._job_places(sources)))
        linked = (targets if downstream else sources)[order]
        met.append(2 * linked + 1)
        self.add(np.concatenate(met))
        walk.reach(np.concatenate([far, written]), linked)

    def _relations(self, by: Adjacency, nodes: Ints, *, write: bool) -> Ints:
        """The relations of `nodes` with one access, in the window, nothing deleted, both
        ends visible (those met with a hidden end counted)."""
        rows, _ = self.view.relations(by, nodes)
        r = self.graph.relations
        rows = rows[r["write"][rows] == write]
        dataset, job, run = (r[c][rows].astype(np.int64) for c in ("dataset", "job", "run"))
        found: Ints = rows[self.view.shown_relations(dataset, job, run, write)]
        return found

    def _shown_flows(
        self, near: Ints, far: Ints, job: Ints, run: Ints, live: npt.NDArray[np.bool_], out: bool
    ) -> npt.NDArray[np.bool_]:
        """Which flows from the frontier's datasets `near` the walk follows: their job (if
        any) and far dataset visible. One with a hidden job is counted as its near relation
        (the job read or wrote the frontier), one with a visible job and a hidden far end as
        its far relation; `out` is whether the near end is the flow's source."""
        if self.visible is None:
            return live
        run = run.astype(np.int64)
        near_writes, far_writes = (np.full(len(job), w, dtype=np.int64) for w in (not out, out))
        jobs_shown = self.visible.shows_jobs(job)
        self.visible.stop_at(near, job, run, near_writes, live & ~jobs_shown)
        shown: npt.NDArray[np.bool_] = self.visible.stop_at(
            far, job, run, far_writes, live & jobs_shown
        )
        return shown & jobs_shown

    def _sorted(self, datasets: npt.NDArray[np.integer], jobs: npt.NDArray[np.integer]) -> Ints:
        order: Ints = np.lexsort((self._job_places(jobs), self._dataset_places(datasets)))
        return order

    def _dataset_places(self, numbers: npt.NDArray[np.integer]) -> Ints:
        order = self.graph.dataset_order
        places: Ints = order[np.minimum(numbers, len(order) - 1)]
        return places

    def _job_places(self, numbers: npt.NDArray[np.integer]) -> Ints:
        """Each job's place in the ids' order; -1 for NONE (a declared flow's job), first."""
        order = self.graph.job_order
        places: Ints = np.where(
            numbers == NONE, -1, order[np.minimum(np.maximum(numbers, 0), len(order) - 1)]
        )
        return places

    # -- the rows between the nodes -------------------------------------------------------

    def between(self, datasets: Ints, jobs: Ints, *, truncated: bool) -> MarquezGraph:
        graph, view = self.graph, self.view
        r, f, e = graph.relations, graph.flows, graph.edges
        ids = graph.ids
        dataset_texts, job_texts = ids.datasets.texts, ids.jobs.texts
        in_datasets = np.zeros(self.dataset_count + 1, dtype=np.bool_)
        in_datasets[datasets] = True
        in_jobs = np.zeros(self.job_count + 1, dtype=np.bool_)
        in_jobs[jobs] = True
        rows, _ = view.relations(graph.by_dataset, datasets)
        job = r["job"][rows].astype(np.int64)
        keep = in_jobs[job] & view.live_jobs(job)
        rows = rows[keep & view.live_datasets(r["dataset"][rows].astype(np.int64))]
        relations = {
            (dataset_texts[d], job_texts[j], "write" if w else "read")
            for d, j, w in zip(
                r["dataset"][rows].tolist(),
                r["job"][rows].tolist(),
                r["write"][rows].tolist(),
                strict=True,
            )
        }
        rows, _ = view.all_flows(graph.by_source, datasets)
        target, job = f["target"][rows].astype(np.int64), f["job"][rows].astype(np.int64)
        keep = in_datasets[np.minimum(target, self.dataset_count)] & (
            (job == NONE) | in_jobs[np.maximum(job, 0)]
        )
        keep &= view.live_datasets(f["source"][rows].astype(np.int64)) & view.live_jobs(job)
        rows = rows[keep]
        flows = {
            (dataset_texts[s], dataset_texts[t], None if j == NONE else job_texts[j])
            for s, t, j in zip(
                f["source"][rows].tolist(),
                f["target"][rows].tolist(),
                f["job"][rows].tolist(),
                strict=True,
            )
        }
        rows, _ = view.edges("source_job", jobs, JOB)
        source, target = (e[f"{side}_job"][rows].astype(np.int64) for side in ("source", "target"))
        keep = in_jobs[np.minimum(target, self.job_count)]
        rows = rows[keep & view.live_jobs(source) & view.live_jobs(target)]
        job_links = {
            (job_texts[s], job_texts[t])
            for s, t in zip(
                e["source_job"][rows].tolist(), e["target_job"][rows].tolist(), strict=True
            )
        }
        return MarquezGraph(
            {dataset_texts[d] for d in datasets.tolist()},
            {job_texts[j] for j in jobs.tolist()},
            truncated,
            relations,
            flows,
            job_links,
        )
