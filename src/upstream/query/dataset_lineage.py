"""Dataset lineage, CDAP style (design §4.1, §4.2): the service behind
`GET /v3/namespaces/{ns}/datasets/{ds}/lineage`, the CLI's `lineage` and the web UI's graph.

The walk is breadth-first and set-based: each level costs a constant number of statements for
the whole frontier (one per chunk of ids), never one per dataset or job; docs/dataset-lineage.md
says why and what each direction follows.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import DIRECTIONS, Direction
from upstream.model.errors import InvalidParameter, Problem, shown
from upstream.model.keys import entity_key
from upstream.model.timeexpr import parse_time_expression
from upstream.model.window import Window
from upstream.model.workflow import is_workflow
from upstream.query.answers import DataEntry, LineageAnswer, ProgramEntry
from upstream.query.collapse import DIMENSIONS, Dimension, KeyedRelation, collapse
from upstream.query.lookup import existing_dataset
from upstream.query.relations import Relation, RelationKey
from upstream.query.rollup import roll_up, workflow_pairs
from upstream.query.run_order import newest_first
from upstream.query.walk_reads import WalkReads
from upstream.query.workflows import WorkflowIndex
from upstream.store import schema as t
from upstream.store.dialect import id_filters

Rollup = Literal["workflow"]
DEFAULT_START = "now-7d"
DEFAULT_END = "now"
DEFAULT_LEVELS = 10
_WHOLE_NUMBER = re.compile(r"[+-]?\d+")
#: Digits of the longest `levels` compared as a number; a longer one is above any cap and is
#: refused before Python is asked to convert it (it refuses past 4,300 digits).
_MAX_DIGITS = 18
_DIMENSIONS: dict[str, Dimension] = {d: d for d in DIMENSIONS}


@dataclass(frozen=True)
class LineageParams:
    """What a dataset-lineage query asks for; `parse` turns query-string values into it."""

    start: datetime
    end: datetime
    levels: int = DEFAULT_LEVELS
    collapse: frozenset[Dimension] = frozenset()
    rollup: Rollup | None = None
    direction: Direction = "both"
    #: The lineage as it stood then (design §4.5); None: now.
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise InvalidParameter.at("levels", f"must be at least 1, not {self.levels}")
        if self.start > self.end:
            raise InvalidParameter.at("start", "start must not be after end")

    @property
    def window(self) -> Window:
        return Window(self.start, self.end, self.as_of)

    @classmethod
    def parse(
        cls,
        *,
        max_levels: int,
        start: str | None = None,
        end: str | None = None,
        levels: str | int | None = None,
        collapse: Iterable[str] = (),
        rollup: str | None = None,
        direction: str | None = None,
        as_of: str | None = None,
        now: datetime | None = None,
    ) -> LineageParams:
        """Validate every parameter; InvalidParameter lists each bad one by its name. With
        `as_of`, `now` in `start` and `end` (and their defaults) means that time: the
        lineage a query made then would have shown."""
        problems: list[Problem] = []
        as_of_at, moment = as_of_time(as_of, now, problems)
        start_at = _time("start", DEFAULT_START if start is None else start, moment, problems)
        end_at = _time("end", DEFAULT_END if end is None else end, moment, problems)
        if start_at and end_at and start_at > end_at:
            problems.append(
                Problem(
                    "start", f"start ({start_at.isoformat()}) is after end ({end_at.isoformat()})"
                )
            )
        depth = parse_levels(levels, max_levels, problems)
        dimensions = _dimensions(collapse, problems)
        if rollup not in (None, "workflow"):
            problems.append(Problem("rollup", f"{shown(rollup)} is not supported; use 'workflow'"))
        if direction is not None and direction not in DIRECTIONS:
            problems.append(
                Problem("direction", f"{shown(direction)} is not one of both, upstream, downstream")
            )
        if problems or start_at is None or end_at is None:
            raise InvalidParameter(problems)
        return cls(
            start=start_at,
            end=end_at,
            levels=depth,
            collapse=dimensions,
            rollup="workflow" if rollup == "workflow" else None,
            direction=DIRECTIONS.get(direction or "both", "both"),
            as_of=as_of_at,
        )


def as_of_time(
    text: str | None, now: datetime | None, problems: list[Problem], name: str = "asOf"
) -> tuple[datetime | None, datetime]:
    """The `asOf` instant (None when not asked for) and the moment `now` stands for in the
    query's other time expressions: that instant, or the present."""
    present = now or datetime.now(UTC)
    if text is None:
        return None, present
    at = _time(name, text, present, problems)
    return at, at or present


def _time(name: str, text: str, now: datetime, problems: list[Problem]) -> datetime | None:
    try:
        return parse_time_expression(text, now)
    except ValueError as exc:
        problems.append(Problem(name, str(exc)))
        return None


def parse_levels(
    value: str | int | None, max_levels: int, problems: list[Problem], default: int = DEFAULT_LEVELS
) -> int:
    """`levels`: a whole number from 1 to `max_levels`, `default` when absent."""
    if value is None:
        return min(default, max_levels)
    if isinstance(value, str) and not _WHOLE_NUMBER.fullmatch(value.strip()):
        problems.append(Problem("levels", f"{shown(value)} is not a whole number"))
        return default
    if isinstance(value, str) and len(value.strip().lstrip("+-").lstrip("0")) > _MAX_DIGITS:
        bound = (
            "at least 1"
            if value.strip().startswith("-")
            else f"at most {max_levels} (the server's max_levels)"
        )
        problems.append(Problem("levels", f"must be {bound}, not {shown(value)}"))
        return default
    depth = int(value)
    if depth < 1:
        problems.append(Problem("levels", f"must be at least 1, not {depth}"))
    elif depth > max_levels:
        problems.append(
            Problem(
                "levels", f"must be at most {max_levels} (the server's max_levels), not {depth}"
            )
        )
    return depth


def _dimensions(values: Iterable[str], problems: list[Problem]) -> frozenset[Dimension]:
    """Repeated `collapse` parameters, each possibly a comma-separated list."""
    found: set[Dimension] = set()
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if name in _DIMENSIONS:
                found.add(_DIMENSIONS[name])
            else:
                problems.append(
                    Problem("collapse", f"{shown(name)} is not one of access, run, component")
                )
    return frozenset(found)


# -- the service ----------------------------------------------------------------------------


def dataset_lineage(
    conn: Connection,
    namespace: str,
    name: str,
    params: LineageParams,
    *,
    max_nodes: int,
    max_relations: int,
) -> LineageAnswer:
    """The lineage of one dataset in the response shape of design §4.2; raises NotFound
    for an unknown namespace or dataset. At most `max_nodes` datasets and programs and
    `max_relations` relations (before collapsing) are returned; a larger result is cut
    (deepest levels first) and says `"truncated": true` with how many of the nodes and
    relations the walk found were left out (`omittedNodes`, `omittedRelations`; the walk
    stops once a cap is passed, so deeper levels are not counted)."""
    seed = existing_dataset(conn, namespace, name).id
    walk = _Walk(conn, params, seed, max_nodes, max_relations)
    walk.prefetch()
    if params.rollup is None:
        walk.by_depth()
    elif params.direction == "both":
        walk.both()
    else:
        walk.directed()
    relations, omitted = walk.result()
    return _render(walk, relations, omitted)


@dataclass(frozen=True)
class Omitted:
    """How many of the nodes and relations a walk found a cut answer leaves out."""

    nodes: int
    relations: int


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
class _Walk:
    """One query's walk: what it found, at which level, and the workflow knowledge it read."""

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
        self.reads = WalkReads(self.conn, self.params.window, self.params.direction)
        self.nodes.add(("dataset", self.seed))

    def prefetch(self) -> None:
        """Read what every level will ask for before the first (a constant number of
        statements whatever `levels` is), and for a rollup the runs' parent chains and
        the datasets' temporary marks."""
        rollup = self.params.rollup is not None
        datasets, runs = self.reads.prefetch(self.seed, self.params.levels, rollup)
        if not rollup:
            return
        self.index.prefetch(runs, datasets)
        self.load_datasets(datasets)
        if self.params.direction == "both":
            workflows = self.index.workflows_of(runs)
            self.reads.relations_of_jobs(workflows)
            self.reads.relations_of_runs(self.index.members(workflows, self.window))

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
        """`relations` as the query shows them: rolled up to workflows when asked."""
        if self.params.rollup is None:
            return relations
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

    # -- without a rollup: every level at once, from the reach's depths ---------------------

    def by_depth(self) -> None:
        """Without a rollup, a node's level is one more than its depth in the walk's reach
        (`store.walks.reach` takes exactly the steps `both` and `directed` take, level by
        level), so each level's relations come straight from its nodes, with no frontier to
        keep: the same answer for a fraction of the work. The caps are applied as the
        level-by-level walks apply them: a level is added whole, and none after the one
        that passed a cap. A rollup passes through temporary datasets within a level,
        which the reach's depths do not know of, so it keeps the level-by-level walks."""
        datasets: dict[int, set[uuid.UUID]] = defaultdict(set)
        jobs: dict[int, set[uuid.UUID]] = defaultdict(set)
        for (kind, node), depth in self.reads.depths.items():
            (datasets if kind == "dataset" else jobs)[depth + 1].add(node)
        for level in sorted(set(datasets) | set(jobs)):
            if self.full():
                return
            if self.params.direction == "both":
                self.add(self.reads.relations_of_jobs(jobs[level]), level)
            else:
                self.add(self.flowing(datasets[level], jobs[level]), level)

    def flowing(self, anchors: set[uuid.UUID], jobs: set[uuid.UUID]) -> list[Relation]:
        """`upstream`/`downstream`: the relations `hops` finds from a level's datasets
        `anchors` and `jobs`, with the components `with_components` gives them: the near
        relations' own, else those stored on the key. (In `both`, a level's relations are
        those of its programs: a dataset's programs are reached at its own depth or nearer,
        as a dataset -> program step adds no level.)"""
        near_access = self.near_access
        far_access = "read" if near_access == "write" else "write"
        keys: set[RelationKey] = set()
        near: dict[RelationKey, set[str]] = {}
        for relation in self.reads.relations_of_datasets(anchors, near_only=True):
            near.setdefault(relation[:4], set()).add(relation.component)
        for flow in self.reads.flows(anchors):
            if flow.job_id is not None:
                keys.add((flow.source, flow.job_id, flow.run_id, "read"))
                keys.add((flow.target, flow.job_id, flow.run_id, "write"))
        feeds = self.reads.feeds_of_datasets(anchors)
        keys.update((feed.near, feed.job_id, feed.run_id, near_access) for feed in feeds)
        for feed in self.reads.feeds_of_jobs(jobs | {f.job_id for f in feeds}):
            if feed.far_job is None and feed.far_dataset is not None:
                keys.add((feed.far_dataset, feed.job_id, feed.run_id, far_access))
        named = self.reads.components_of(keys - near.keys())
        keys.update(near)
        return [
            Relation(*key, component)
            for key in keys
            for component in near.get(key) or named.get(key) or ("",)
        ]

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
        if self.params.rollup is not None:
            members = self.index.members(programs & self.workflows, self.window)
            found |= self.view(self.reads.relations_of_runs(members))
            found = {r for r in found if r.job_id in programs}
        return found

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
            if self.params.rollup is not None:
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
                link = self.index.workflow_of(hop.run_id) if self.params.rollup else None
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

    def result(self) -> tuple[list[Relation], Omitted | None]:
        """The relations found, cut to `max_nodes` nodes and `max_relations` relations:
        nearer levels first, then a stable order, so a cut result is the same on every call.
        Also what was left out of what the walk found (None when nothing was). An answer
        within both caps is kept whole, and its order is the rendering's to give."""
        if len(self.nodes) <= self.max_nodes:
            if len(self.found) <= self.max_relations:
                return list(self.found), None
            return self.first_relations()
        levels = sorted(self.found.items(), key=lambda found: (found[1], found[0].sort_key))
        ordered = [relation for relation, _ in levels]
        nodes: set[tuple[str, uuid.UUID]] = {("dataset", self.seed)}
        kept: list[Relation] = []
        for relation in ordered:
            if len(kept) >= self.max_relations:
                break
            dataset, program = ("dataset", relation.dataset_id), ("program", relation.job_id)
            if len(nodes) + (dataset not in nodes) + (program not in nodes) > self.max_nodes:
                continue
            nodes.add(dataset)
            nodes.add(program)
            kept.append(relation)
        if len(kept) == len(ordered):
            return kept, None
        every = {("dataset", r.dataset_id) for r in ordered} | {
            ("program", r.job_id) for r in ordered
        }
        return kept, Omitted(len(every - nodes), len(ordered) - len(kept))

    def first_relations(self) -> tuple[list[Relation], Omitted]:
        """`result` when only `max_relations` cuts: the nearest levels whole, and of the
        level the cap falls in, the first relations in the stable order. Only that level
        is sorted (a cut `both` walk finds tens of thousands of relations)."""
        by_level: dict[int, list[Relation]] = defaultdict(list)
        for relation, level in self.found.items():
            by_level[level].append(relation)
        kept: list[Relation] = []
        for level in sorted(by_level):
            room = self.max_relations - len(kept)
            if len(by_level[level]) > room:
                kept += sorted(by_level[level], key=lambda r: r.sort_key)[:room]
                break
            kept += by_level[level]
        nodes = {("dataset", self.seed)}
        nodes.update(("dataset", r.dataset_id) for r in kept)
        nodes.update(("program", r.job_id) for r in kept)
        return kept, Omitted(len(self.nodes - nodes), len(self.found) - len(kept))

    def temporary_datasets(self, relations: list[Relation]) -> set[uuid.UUID]:
        """Datasets temporary to the workflow run of one of their relations' runs. After a
        rollup those relations are gone; what the walk found temporary is the answer (the
        queried dataset itself, or one also used outside that workflow run). The
        relations' datasets are loaded (`load_datasets`) already."""
        if self.params.rollup is not None:
            return {dataset for dataset, _ in self.temporary}
        names = {d: self.datasets[d][1] for d in {r.dataset_id for r in relations}}
        maybe = self.index.possibly_temporary(names)
        relations = [r for r in relations if r.dataset_id in maybe]
        self.index.load(r.run_id for r in relations)
        pairs = workflow_pairs(relations, self.index.workflow_of)
        return {dataset for dataset, _ in self.temporaries(pairs)}


# -- rendering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Program:
    namespace: str
    name: str
    workflow: bool

    @property
    def key(self) -> str:
        return entity_key("workflow" if self.workflow else "job", self.namespace, self.name)


def _render(walk: _Walk, relations: list[Relation], omitted: Omitted | None) -> LineageAnswer:
    conn = walk.conn
    dataset_ids, job_ids = {walk.seed}, set()
    maybe_runs: set[uuid.UUID | None] = set()
    for r in relations:
        dataset_ids.add(r.dataset_id)
        job_ids.add(r.job_id)
        maybe_runs.add(r.run_id)
    run_ids = {run for run in maybe_runs if run is not None}
    walk.load_datasets(dataset_ids)
    programs = _programs(conn, job_ids, walk.workflows)
    run_order = newest_first(conn, run_ids)
    temporary = walk.temporary_datasets(relations)

    def data_key(dataset_id: uuid.UUID) -> str:
        namespace, name = walk.datasets[dataset_id]
        return entity_key("dataset", namespace, name)

    data_keys = {d: data_key(d) for d in dataset_ids}
    program_keys = {job_id: program.key for job_id, program in programs.items()}
    run_texts: dict[uuid.UUID | None, str | None] = {run: str(run) for run in run_ids}
    run_texts[None] = None
    keyed = [
        KeyedRelation(
            data_keys[r.dataset_id],
            program_keys[r.job_id],
            r.access,
            run_texts[r.run_id],
            r.component,
        )
        for r in relations
    ]
    data: dict[str, DataEntry] = {}
    for dataset_id in dataset_ids:
        namespace, name = walk.datasets[dataset_id]
        entry: DataEntry = {"entityId": {"type": "dataset", "namespace": namespace, "name": name}}
        if dataset_id in temporary:
            entry["temporary"] = True
        data[data_keys[dataset_id]] = entry
    program_entries: dict[str, ProgramEntry] = {
        p.key: {
            "entityId": {
                "type": "workflow" if p.workflow else "job",
                "namespace": p.namespace,
                "name": p.name,
            }
        }
        for p in programs.values()
    }
    response = cast(
        LineageAnswer,
        {
            "start": int(walk.params.start.timestamp()),
            "end": int(walk.params.end.timestamp()),
            **({"asOf": walk.params.as_of.isoformat()} if walk.params.as_of else {}),
            "relations": collapse(keyed, walk.params.collapse, run_order),
            "data": dict(sorted(data.items())),
            "programs": dict(sorted(program_entries.items())),
        },
    )
    if omitted is not None:
        response["truncated"] = True
        response["omittedNodes"] = omitted.nodes
        response["omittedRelations"] = omitted.relations
    return response


def _programs(
    conn: Connection, job_ids: set[uuid.UUID], rolled_up: set[uuid.UUID]
) -> dict[uuid.UUID, _Program]:
    j = t.jobs.c
    found: dict[uuid.UUID, _Program] = {}
    for matches in id_filters(conn, j.id, job_ids):
        query = sa.select(j.id, j.namespace, j.name, j.job_type, j.seen_as_parent).where(matches)
        for row in conn.execute(query):
            workflow = row.id in rolled_up or is_workflow(row.job_type, row.seen_as_parent)
            found[row.id] = _Program(row.namespace, row.name, workflow)
    return found
