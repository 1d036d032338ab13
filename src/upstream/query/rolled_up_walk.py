"""Dataset lineage rolled up into workflows (design §4.2, `rollup=workflow`): the walk level by
level, which passes through a workflow run's temporary datasets within a level and shows the
workflow in place of the runs inside its runs.

A walk without a rollup needs none of this: a node's level is its depth in the walk's reach,
so `upstream.query.graph_index.dataset_walk` finds its relations on the graph index. Here the level
loop stays, its rows read from the graph index (`upstream.query.graph_index.walk_reads`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.walk_reads import WalkReads
from upstream.query.lineage_params import LineageParams
from upstream.query.relations import Relation, RelationKey
from upstream.query.rollup import roll_up, workflow_pairs
from upstream.query.workflows import WorkflowIndex
from upstream.store import schema as t
from upstream.store.dialect import id_filters


@dataclass(frozen=True)
class RolledUp:
    """A rolled-up walk's findings: each relation shown with its level, the jobs standing
    for workflows, and the datasets found temporary (ids as text)."""

    found: dict[ShownRelation, int]
    workflows: set[str]
    temporary: set[str]


@dataclass(frozen=True)
class _Hop:
    """One step of a directed walk: the relations it shows, the run that made it, where it
    started (a dataset, or None from a job) and where it leads."""

    relations: tuple[tuple[uuid.UUID, uuid.UUID, uuid.UUID | None, str], ...]
    run_id: uuid.UUID | None
    anchor: uuid.UUID | None = None
    next_dataset: uuid.UUID | None = None
    next_job: uuid.UUID | None = None


@dataclass
class RolledUpWalk:
    """One rolled-up walk: what it found, at which level, and the workflow knowledge it read."""

    conn: Connection
    params: LineageParams
    seed: uuid.UUID
    max_nodes: int
    max_relations: int
    found: dict[Relation, int] = field(default_factory=dict)
    nodes: set[tuple[str, uuid.UUID]] = field(default_factory=set)
    #: Jobs standing for the runs inside their runs after the rollup (`workflow.` keys).
    workflows: set[uuid.UUID] = field(default_factory=set)
    #: (dataset, workflow run) pairs found temporary so far.
    temporary: set[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=set)
    datasets: dict[uuid.UUID, tuple[str, str]] = field(default_factory=dict)
    index: WorkflowIndex = field(init=False)
    reads: WalkReads = field(init=False)

    def __post_init__(self) -> None:
        self.index = WorkflowIndex(self.conn)
        self.reads = WalkReads(graph_of(self.conn), self.params.window, self.params.direction)
        self.nodes.add(("dataset", self.seed))

    def prefetch(self) -> None:
        """Read what every level will ask for before the first (a constant number of
        statements whatever `levels` is), the runs' parent chains and the datasets'
        temporary marks."""
        datasets, runs = self.reads.prefetch(self.seed, self.params.levels)
        self.index.prefetch(runs, datasets)
        self.load_datasets(datasets)
        if self.params.direction == "both":
            self.index.members(self.index.workflows_of(runs), self.window)

    @property
    def window(self) -> Window:
        return self.params.window

    def full(self) -> bool:
        return len(self.nodes) > self.max_nodes or len(self.found) > self.max_relations

    def add(self, relations: Iterable[Relation], level: int) -> None:
        for relation in relations:
            if relation not in self.found:
                self.found[relation] = level
                self.nodes.add(("dataset", relation.dataset_id))
                self.nodes.add(("program", relation.job_id))

    # -- rollup ---------------------------------------------------------------------------

    def view(self, relations: set[Relation]) -> set[Relation]:
        """`relations` as the query shows them: rolled up to workflows."""
        self.index.load(r.run_id for r in relations)
        pairs = workflow_pairs(relations, self.index.workflow_of)
        self.temporary |= self.temporaries(pairs)
        rolled = roll_up(relations, self.index.workflow_of, self.temporary)
        self.workflows |= rolled.workflows
        return rolled.relations

    def temporaries(
        self, pairs: set[tuple[uuid.UUID, uuid.UUID]]
    ) -> set[tuple[uuid.UUID, uuid.UUID]]:
        self.load_datasets(d for d, _ in pairs)
        names = {d: self.datasets[d][1] for d, _ in pairs if d in self.datasets}
        return self.index.temporaries(pairs, names)

    def load_datasets(self, ids: Iterable[uuid.UUID]) -> None:
        wanted = set(ids) - set(self.datasets)
        d = t.datasets.c
        for matches in id_filters(self.conn, d.id, wanted):
            query = sa.select(d.id, d.namespace, d.name).where(matches)
            self.datasets.update(
                {id_: (namespace, name) for id_, namespace, name in self.conn.execute(query).all()}
            )

    # -- direction=both: CDAP's walk over relations ----------------------------------------

    def both(self) -> None:
        """Breadth-first over the dataset-program graph, ignoring read/write: one level is
        datasets -> the programs touching them -> every dataset those programs touch."""
        seen_datasets = {self.seed}
        seen_programs: set[uuid.UUID] = set()
        frontier = {self.seed}
        for level in range(1, self.params.levels + 1):
            if not frontier or self.full():
                return
            touching = self.view(self.reads.relations_of_datasets(frontier))
            self.add(touching, level)
            programs = {r.job_id for r in touching} - seen_programs
            seen_programs |= programs
            theirs = self.relations_of_programs(programs)
            self.add(theirs, level)
            frontier = {r.dataset_id for r in theirs} - seen_datasets
            seen_datasets |= frontier

    def relations_of_programs(self, programs: set[uuid.UUID]) -> set[Relation]:
        """Every relation of `programs` in the window; after a rollup a workflow's relations
        are those of the runs inside its runs, and a job's only those outside workflows."""
        if not programs:
            return set()
        found = self.view(self.reads.relations_of_jobs(programs))
        members = self.index.members(programs & self.workflows, self.window)
        found |= self.view(self.reads.relations_of_runs(members))
        return {r for r in found if r.job_id in programs}

    # -- direction=upstream|downstream: data flow -----------------------------------------

    def directed(self) -> None:
        """Breadth-first along data flow: one level is datasets -> the jobs that wrote them
        (read them, downstream) -> the datasets that flowed in (out). A job -> job edge
        carries the walk to the other job at the next level."""
        seen_datasets = {self.seed}
        seen_jobs: set[uuid.UUID] = set()
        frontier = {self.seed}
        job_frontier: set[uuid.UUID] = set()
        for level in range(1, self.params.levels + 1):
            if not (frontier or job_frontier) or self.full():
                return
            next_datasets, next_jobs = self.directed_level(frontier, job_frontier, level)
            frontier = next_datasets - seen_datasets
            seen_datasets |= frontier
            job_frontier = next_jobs - seen_jobs
            seen_jobs |= job_frontier

    def directed_level(
        self, datasets: set[uuid.UUID], jobs: set[uuid.UUID], level: int
    ) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
        """One level. With rollup=workflow a dataset temporary to the workflow run that made
        the hop is not shown and not a next dataset; the walk passes through it within the
        same level, following only flows of that workflow run, so the workflow's real
        inputs (outputs) stand where its temporaries were."""
        next_datasets: set[uuid.UUID] = set()
        next_jobs: set[uuid.UUID] = set()
        open_datasets = set(datasets)
        only_in: dict[uuid.UUID, set[uuid.UUID]] = {}
        passed: set[tuple[uuid.UUID, uuid.UUID]] = set()
        first = True
        while open_datasets or only_in or (first and jobs):
            anchors = open_datasets | set(only_in)
            hops, near = self.hops(anchors, jobs if first else set(), first)
            self.index.load(h.run_id for h in hops)
            hops = [h for h in hops if self.allowed(h, open_datasets, only_in)]
            shown = self.view(self.with_components(hops, near, anchors))
            self.add(shown, level)
            further: dict[uuid.UUID, set[uuid.UUID]] = {}
            for hop in hops:
                if hop.next_job is not None:
                    next_jobs.add(hop.next_job)
                if hop.next_dataset is None:
                    continue
                link = self.index.workflow_of(hop.run_id)
                pair = (hop.next_dataset, link.run_id) if link else None
                if pair is not None and pair in self.temporary:
                    if pair not in passed:
                        passed.add(pair)
                        further.setdefault(pair[0], set()).add(pair[1])
                else:
                    next_datasets.add(hop.next_dataset)
            open_datasets, only_in, first = set(), further, False
        return next_datasets, next_jobs

    def allowed(
        self, hop: _Hop, open_datasets: set[uuid.UUID], only_in: dict[uuid.UUID, set[uuid.UUID]]
    ) -> bool:
        """A hop from a temporary dataset counts only inside that dataset's workflow run."""
        if hop.anchor is None or hop.anchor in open_datasets or hop.anchor not in only_in:
            return True
        link = self.index.workflow_of(hop.run_id)
        return link is not None and link.run_id in only_in[hop.anchor]

    @property
    def near_access(self) -> str:
        """The access of a frontier dataset's own relations: written (read, downstream)."""
        return "write" if self.params.direction == "upstream" else "read"

    def hops(
        self, datasets: set[uuid.UUID], jobs: set[uuid.UUID], job_edges: bool
    ) -> tuple[list[_Hop], set[Relation]]:
        """The frontier's own writers (readers, downstream), which show who made (used)
        the data even when nothing flowed further; the flows into (out of) it; and, when
        asked, the edges with a job end. Also those writers' (readers') relations."""
        upstream = self.params.direction == "upstream"
        near = self.reads.relations_of_datasets(datasets, near_only=True)
        found = [
            _Hop(((r.dataset_id, r.job_id, r.run_id, r.access),), r.run_id, r.dataset_id)
            for r in near
        ]
        for flow in self.reads.flows(datasets):
            if flow.job_id is None:
                continue  # a DatasetEvent's job-less declaration: no program to show
            found.append(
                _Hop(
                    relations=(
                        (flow.source, flow.job_id, flow.run_id, "read"),
                        (flow.target, flow.job_id, flow.run_id, "write"),
                    ),
                    run_id=flow.run_id,
                    anchor=flow.target if upstream else flow.source,
                    next_dataset=flow.source if upstream else flow.target,
                )
            )
        if job_edges:
            found.extend(self.job_edge_hops(datasets, jobs, upstream))
        return found, near

    def job_edge_hops(
        self, datasets: set[uuid.UUID], jobs: set[uuid.UUID], upstream: bool
    ) -> list[_Hop]:
        """Edges with a job end (lineage facet JOB entries and inputs). Upstream: a job K
        that feeds a frontier dataset T writes T; then whatever feeds K (a dataset S that
        K reads, or a job whose turn comes at the next level). Downstream mirrors it."""
        hops: list[_Hop] = []
        reached = set(jobs)
        near_access, far_access = ("write", "read") if upstream else ("read", "write")
        for feed in self.reads.feeds_of_datasets(datasets):
            hops.append(
                _Hop(((feed.near, feed.job_id, feed.run_id, near_access),), feed.run_id, feed.near)
            )
            reached.add(feed.job_id)
        for feed in self.reads.feeds_of_jobs(reached):
            if feed.far_job is not None:
                hops.append(_Hop((), feed.run_id, next_job=feed.far_job))
            elif feed.far_dataset is not None:
                hops.append(
                    _Hop(
                        ((feed.far_dataset, feed.job_id, feed.run_id, far_access),),
                        feed.run_id,
                        next_dataset=feed.far_dataset,
                    )
                )
        return hops

    def with_components(
        self, hops: list[_Hop], near: set[Relation], anchors: set[uuid.UUID]
    ) -> set[Relation]:
        """The hops' relations with the components stored on them ("" when none is).
        `near` holds every relation of the `anchors` with the near access, components
        included; only the other keys are looked up."""
        keys = {key for hop in hops for key in hop.relations}
        components: dict[RelationKey, set[str]] = {}
        for relation in near:
            components.setdefault(relation[:4], set()).add(relation.component)
        access = self.near_access
        unknown = {k for k in keys if k[3] != access or k[0] not in anchors}
        components.update(self.reads.components_of(unknown))
        return {Relation(*key, c) for key in keys for c in components.get(key) or ("",)}

    # -- result ---------------------------------------------------------------------------

    def shown(self) -> RolledUp:
        """What the walk found, as answers show it: ids as their text."""
        return RolledUp(
            found={
                ShownRelation(
                    str(r.dataset_id),
                    str(r.job_id),
                    None if r.run_id is None else str(r.run_id),
                    r.access,
                    r.component,
                ): level
                for r, level in self.found.items()
            },
            workflows={str(job) for job in self.workflows},
            temporary={str(dataset) for dataset, _ in self.temporary},
        )
