"""`GET /api/v1/lineage`: Marquez's job<->dataset graph, cumulative and exact (design §4.4).

Marquez draws a job's latest inputs and outputs, so a job that reads `customers` and `orders`
and writes `customer_summary` and `order_summary` looks as if each output came from both
inputs, and outputs of earlier runs vanish. Here:

- The walk follows real data flow (the flows derived at write time: explicit edges, then
  columnLineage, then inputs x outputs where nothing explicit exists) over every run and
  declaration.
  Upstream of a dataset are the jobs that wrote it and, through each, only the datasets that
  really fed it; downstream are the jobs that read it and only the outputs it really fed. A job
  seed contributes everything it read and wrote. Job->job edges (lineage facet JOB entries) are
  walked too. One level crosses one job, so `depth` counts jobs, as in Marquez.
- Edges are Marquez's `{origin, destination}`: dataset->job for a read, job->dataset for a
  write (over all runs), dataset->dataset for flows no job carried (a DatasetEvent's declared
  lineage) and job->job. Because a job node alone cannot say which input fed which output,
  each job->dataset edge also lists `sources`, the datasets whose data the job carried into
  that destination, and each dataset->job edge lists `targets`, where the origin's data went
  through the job. Clients that know only `origin`/`destination` see Marquez's graph.
- Node `data` is the entity's Dataset or Job document without facets (Marquez's graph has none
  either), a job with its latest run only.
- At most `max_nodes` nodes; a cut graph says `"truncated": true`.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Step
from upstream.model.errors import InvalidParameter
from upstream.model.flow_rules import Flow, flow_order
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.nodeid import dataset_node_id, job_node_id
from upstream.model.window import Window
from upstream.query.keyed_rows import KeyedRows
from upstream.query.marquez.answers import GraphNode, MarquezGraphAnswer
from upstream.query.marquez.common import Json, resolve_node
from upstream.query.marquez.datasets import dataset_docs
from upstream.query.marquez.jobs import job_docs
from upstream.store.deletion import not_deleted
from upstream.store.dialect import id_filters
from upstream.store.walks import flows, marquez_reach
from upstream.store.window import edges_as_of, relations_as_of, run_in_window

Kind = Literal["dataset", "job"]
DIRECTIONS: tuple[Step, ...] = ("downstream", "upstream")


@dataclass
class _Frontier:
    """What one direction of the walk expands next: datasets, and whole jobs (every dataset
    such a job touched in that direction counts)."""

    datasets: set[uuid.UUID] = field(default_factory=set)
    jobs: set[uuid.UUID] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.datasets or self.jobs)

    def copy(self) -> _Frontier:
        return _Frontier(set(self.datasets), set(self.jobs))


@dataclass
class _Graph:
    max_nodes: int
    datasets: set[uuid.UUID] = field(default_factory=set)
    jobs: set[uuid.UUID] = field(default_factory=set)
    truncated: bool = False

    def add(self, kind: Kind, node: uuid.UUID) -> bool:
        """Add a node; False when it is already in or the cap is reached (then truncated)."""
        members = self.datasets if kind == "dataset" else self.jobs
        if node in members:
            return False
        if len(self.datasets) + len(self.jobs) >= self.max_nodes:
            self.truncated = True
            return False
        members.add(node)
        return True


def lineage_graph(
    conn: Connection, node_id: str, depth: int, max_nodes: int, window: Window | None = None
) -> MarquezGraphAnswer:
    """The graph around `node_id` (a dataset or job), `depth` jobs deep each way; with a
    `window`, only its runs count (`Window.until(as_of)`: the graph as it stood then)."""
    seed = resolve_node(conn, node_id)
    if seed.kind == "datasetField":
        raise InvalidParameter.at(
            "nodeId", "lineage takes a dataset or job node id; use /column-lineage"
        )
    graph = _Graph(max_nodes)
    start = _Frontier()
    if seed.kind == "dataset":
        seed_id = DatasetRef(seed.namespace, seed.name).id
        graph.add("dataset", seed_id)
        start.datasets.add(seed_id)
    else:
        seed_id = JobRef(seed.namespace, seed.name).id
        graph.add("job", seed_id)
        start.jobs.add(seed_id)
    # Each direction expands a node once, even one the other direction already put in the
    # graph (a job that reads and writes the same dataset).
    walks: dict[Step, tuple[_Frontier, _Frontier]] = {
        direction: (start.copy(), start.copy()) for direction in DIRECTIONS
    }
    reads = {direction: _Reads(conn, direction, window) for direction in DIRECTIONS}
    for direction in DIRECTIONS:
        reads[direction].prefetch((seed.kind, seed_id), depth)
    for _ in range(depth):
        if not any(frontier for frontier, _ in walks.values()):
            break
        for direction, (frontier, seen) in list(walks.items()):
            walks[direction] = (_step(reads[direction], graph, frontier, seen), seen)
    nodes = cast(list[GraphNode], _render(conn, graph, window))
    return {"graph": nodes, "truncated": graph.truncated}


class _Reads:
    """The rows one direction of the walk reads, for every level at once (`prefetch`, a
    constant number of statements whatever the depth), and when asked for what the
    prefetch did not cover."""

    def __init__(self, conn: Connection, direction: Step, window: Window | None) -> None:
        self.conn = conn
        self.direction = direction
        near, far = ("read", "write") if direction == "downstream" else ("write", "read")
        self.near = KeyedRows(lambda ids: _relations(conn, window, ids, access=near), _dataset_of)
        self.far = KeyedRows(
            lambda ids: _relations(conn, window, None, jobs=ids, access=far), _job_of
        )
        self.flows = KeyedRows(
            lambda ids: flows(conn, ids, direction, window),
            (lambda f: f.source) if direction == "downstream" else (lambda f: f.target),
        )
        self.job_edges = KeyedRows(
            lambda ids: _job_edges(conn, ids, direction, window),
            (lambda e: e[0]) if direction == "downstream" else (lambda e: e[1]),
        )

    def prefetch(self, seed: tuple[str, uuid.UUID], depth: int) -> None:
        reached = marquez_reach(self.conn, seed, self.direction, depth)
        datasets = {node for kind, node in reached if kind == "dataset"}
        self.near.fetch(datasets)
        self.flows.fetch(datasets)
        self.far.fetch(node for kind, node in reached if kind == "job")
        self.job_edges.fetch(node for kind, node in reached if kind in ("job", "reached"))


def _dataset_of(relation: tuple[uuid.UUID, uuid.UUID, str]) -> uuid.UUID:
    return relation[0]


def _job_of(relation: tuple[uuid.UUID, uuid.UUID, str]) -> uuid.UUID:
    return relation[1]


def _step(reads: _Reads, graph: _Graph, frontier: _Frontier, seen: _Frontier) -> _Frontier:
    """Cross one job level in the reads' direction; returns the next frontier (nodes `seen`
    in this direction are not expanded again)."""
    direction = reads.direction
    following = _Frontier()
    if not frontier:
        return following

    def reach(kind: Kind, node: uuid.UUID) -> bool:
        """Put `node` in the graph; True when this direction should expand it next."""
        graph.add(kind, node)
        members, expanded = (
            (graph.datasets, seen.datasets) if kind == "dataset" else (graph.jobs, seen.jobs)
        )
        if node not in members or node in expanded:
            return False
        expanded.add(node)
        return True

    # From datasets: the jobs that read (downstream) or wrote (upstream) them, and through
    # each job only the datasets the flow really reaches.
    reached_jobs: set[uuid.UUID] = set()
    for _, job, _ in sorted(set(reads.near.get(frontier.datasets))):
        graph.add("job", job)
        if job in graph.jobs:
            reached_jobs.add(job)
    for flow in sorted(set(reads.flows.get(frontier.datasets)), key=flow_order):
        far = flow.target if direction == "downstream" else flow.source
        if flow.job_id is not None:
            graph.add("job", flow.job_id)
            if flow.job_id not in graph.jobs:
                continue  # cut at the node cap: nothing beyond a job left out
            reached_jobs.add(flow.job_id)
        if reach("dataset", far):
            following.datasets.add(far)
    # From whole jobs: everything they wrote (downstream) or read (upstream).
    for dataset, _, _ in sorted(set(reads.far.get(frontier.jobs))):
        if reach("dataset", dataset):
            following.datasets.add(dataset)
    # Job -> job edges carry data between jobs with no dataset in between.
    for source, target in sorted(set(reads.job_edges.get(frontier.jobs | reached_jobs))):
        other = target if direction == "downstream" else source
        if reach("job", other):
            following.jobs.add(other)
    return following


def _relations(
    conn: Connection,
    window: Window | None,
    datasets: Iterable[uuid.UUID] | None,
    *,
    jobs: Iterable[uuid.UUID] | None = None,
    access: str | None = None,
) -> set[tuple[uuid.UUID, uuid.UUID, str]]:
    """Distinct (dataset, job, access) relations over the runs of `window` (all runs without
    one), anchored on datasets or jobs."""
    r = relations_as_of(window)
    anchor, anchored = (r.c.dataset_id, datasets) if datasets is not None else (r.c.job_id, jobs)
    found: set[tuple[uuid.UUID, uuid.UUID, str]] = set()
    for matches in id_filters(conn, anchor, anchored or ()):
        query = sa.select(r.c.dataset_id, r.c.job_id, r.c.access).where(
            matches, run_in_window(r.c.run_id, window), not_deleted(r.c.dataset_id, r.c.job_id)
        )
        if access is not None:
            query = query.where(r.c.access == access)
        found.update(tuple(row) for row in conn.execute(query.distinct()))
    return found


def _job_edges(
    conn: Connection, jobs: Iterable[uuid.UUID], direction: Step, window: Window | None
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """(source job, target job) of job->job edges leaving (downstream) or entering `jobs`."""
    e = edges_as_of(window)
    anchor = e.c.source_job_id if direction == "downstream" else e.c.target_job_id
    found: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for matches in id_filters(conn, anchor, jobs):
        query = (
            sa.select(e.c.source_job_id, e.c.target_job_id)
            .where(
                matches,
                e.c.source_type == "job",
                e.c.target_type == "job",
                not_deleted(e.c.source_job_id, e.c.target_job_id),
                run_in_window(e.c.run_id, window),
            )
            .distinct()
        )
        found.update((row.source_job_id, row.target_job_id) for row in conn.execute(query))
    return found


def _render(conn: Connection, graph: _Graph, window: Window | None) -> list[Json]:
    datasets = dataset_docs(conn, graph.datasets)
    jobs = job_docs(conn, graph.jobs, recent_runs=1)
    for doc in [*datasets.values(), *jobs.values()]:
        del doc["facets"]  # as in Marquez's graph; facets can be large, the entity has them
    ids = {i: dataset_node_id(d["namespace"], d["name"]) for i, d in datasets.items()}
    ids.update({i: job_node_id(j["namespace"], j["name"]) for i, j in jobs.items()})
    edges: dict[tuple[str, str], Json] = {}

    def edge(origin: uuid.UUID, destination: uuid.UUID) -> Json:
        key = (ids[origin], ids[destination])
        if key not in edges:
            edges[key] = {"origin": key[0], "destination": key[1]}
            if origin in jobs and destination in datasets:
                edges[key]["sources"] = []
            elif origin in datasets and destination in jobs:
                edges[key]["targets"] = []
        return edges[key]

    for dataset, job, access in sorted(_relations(conn, window, graph.datasets)):
        if job in graph.jobs:
            if access == "read":
                edge(dataset, job)
            else:
                edge(job, dataset)
    for flow in _flows_within(conn, graph, window):
        if flow.job_id is None:
            edge(flow.source, flow.target)
            continue
        carried = edge(flow.job_id, flow.target)["sources"]
        fed = edge(flow.source, flow.job_id)["targets"]
        if ids[flow.source] not in carried:
            carried.append(ids[flow.source])
        if ids[flow.target] not in fed:
            fed.append(ids[flow.target])
    for source, target in _job_edges(conn, graph.jobs, "downstream", window):
        if target in graph.jobs:
            edge(source, target)
    incoming: dict[str, list[Json]] = defaultdict(list)
    outgoing: dict[str, list[Json]] = defaultdict(list)
    for key in sorted(edges):
        doc = edges[key]
        for names in ("sources", "targets"):
            if names in doc:
                doc[names].sort()
        outgoing[key[0]].append(doc)
        incoming[key[1]].append(doc)
    typed = [(i, "DATASET", doc) for i, doc in datasets.items()]
    typed += [(i, "JOB", doc) for i, doc in jobs.items()]
    nodes = [
        {
            "id": ids[i],
            "type": kind,
            "data": doc,
            "inEdges": incoming.get(ids[i], []),
            "outEdges": outgoing.get(ids[i], []),
        }
        for i, kind, doc in typed
    ]
    return sorted(nodes, key=lambda n: str(n["id"]))


def _flows_within(conn: Connection, graph: _Graph, window: Window | None) -> list[Flow]:
    """Every flow whose datasets (and job) are all in the graph."""
    return [
        f
        for f in flows(conn, graph.datasets, "downstream", window)
        if f.target in graph.datasets and (f.job_id is None or f.job_id in graph.jobs)
    ]
