"""Query latency against a live server, beside an in-memory networkx walk over the same edges.

Each query is asked once to warm up, then `repetitions` times; median and p95 are reported.
A sample is the request until the whole answer has arrived; the client parses it afterwards.
The baseline holds the ground truth in memory (built before the clock starts) and walks it
with networkx to the same depth, so the ratio says what the database, the HTTP layer and the
lineage rules cost over a plain graph walk.

Beside each query: its target (issue 31's limits for the medium workload, `TARGETS`), and
the limit every walk is held to, three times the in-memory walk plus the round trip of
`/health` measured in the same run (what HTTP costs a request that does nothing). The
server's graph index is measured too: how long a load takes in process, and the bytes its
columns hold per flow row and per relation; and `upstream lineage --db` end to end.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import networkx as nx
import sqlalchemy as sa

from benchmarks.databases import fresh_database
from benchmarks.generator import in_chunks, load_truth, read_events
from benchmarks.server import Server
from upstream.ingest.service import ingest_documents
from upstream.model.identity import JobRef
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.graph import load as load_index
from upstream.store import graph_rows
from upstream.store import schema as t
from upstream.store.change_log import position
from upstream.store.engine import Store, Timeouts

LEVELS = (1, 5, 10, 20)

#: Milliseconds each query should answer in over HTTP on the medium workload (issue 31). The
#: issue's "levels=5 <= 8 ms" is taken for the answers of that size: upstream listed and
#: collapsed, downstream collapsed (downstream listed at levels=5 lists thousands).
TARGETS: dict[str, float] = {
    "dataset upstream levels=10": 15,
    "dataset downstream levels=10": 100,
    "dataset downstream levels=10 collapse=run": 15,
    "dataset upstream levels=5": 8,
    "dataset upstream levels=5 collapse=run": 8,
    "dataset downstream levels=5 collapse=run": 8,
    "dataset both levels=10": 150,
    "dataset both levels=10 rollup": 150,
    "marquez lineage depth=10": 60,
    "marquez lineage job depth=10": 60,
    "lineage diff upstream levels=10": 40,
    "lineage diff downstream levels=10": 40,
    "field paths": 5,
    "field summary incoming levels=3": 5,
    "field summary both levels=3": 5,
}
#: Every walk within this many times the in-memory walk, plus the `/health` round trip.
WALK_FACTOR = 3
#: Seconds `upstream lineage --db` may take end to end on the medium store (issue 31).
CLI_TARGET_S = 3.0
#: The bounds of the benchmark's own database work (loading the store, `ANALYZE`, loading the
#: index to measure it, reading its rows): a request's 30 s bound is for one answer, and on a
#: busy machine loading the index of one day of the large workload took longer than that.
LONG_WORK = Timeouts(statement=900, lock=900)


@dataclass(frozen=True)
class Query:
    name: str
    path: str
    params: dict[str, Any]
    baseline: Callable[[], int]


class Graphs:
    """The truth as networkx graphs: dataset flows, dataset-job accesses, field flows."""

    def __init__(self, truth: dict[str, Any]) -> None:
        self.flows = nx.DiGraph()
        for s_ns, s_name, t_ns, t_name, job, run in truth["dataset_edges"]:
            source, target = (s_ns, s_name), (t_ns, t_name)
            if not self.flows.has_edge(source, target):
                self.flows.add_edge(source, target, runs=[])
            self.flows[source][target]["runs"].append((job, run))
        self.upstream = self.flows.reverse(copy=True)
        self.accesses = nx.Graph()
        for ns, name, job, run, access in truth["accesses"]:
            key = ("job", job)
            if not self.accesses.has_edge((ns, name), key):
                self.accesses.add_edge((ns, name), key, runs=[])
            self.accesses[(ns, name)][key]["runs"].append((run, access))
        self.fields = nx.DiGraph()
        for s_ns, s_name, s_field, t_ns, t_name, t_field, _run in truth["field_edges"]:
            if t_field:
                self.fields.add_edge((s_ns, s_name, s_field), (t_ns, t_name, t_field))
        self.fields_upstream = self.fields.reverse(copy=True)

    def walk(self, graph: nx.Graph, starts: list[tuple[str, ...]], radius: int) -> int:
        """Nodes within `radius` hops of any start and the runs on the edges between them."""
        present = [s for s in starts if s in graph]
        if not present:
            return 0
        reached = nx.multi_source_dijkstra_path_length(graph, present, cutoff=radius)
        edges = graph.subgraph(reached).edges(data=True)
        return int(sum(len(data.get("runs", ())) or 1 for _, _, data in edges))

    def dataset(self, start: tuple[str, str], direction: str, levels: int) -> int:
        if direction == "both":  # dataset -> jobs -> datasets is one level
            return self.walk(self.accesses, [start], 2 * levels)
        graph = self.upstream if direction == "upstream" else self.flows
        return self.walk(graph, [start], levels)

    def field_summary(self, start: tuple[str, str, str], direction: str, levels: int) -> int:
        if direction == "both":
            return self.walk(self.fields_upstream, [start], levels) + self.walk(
                self.fields, [start], levels
            )
        return self.walk(self.fields_upstream, [start], levels)

    def downstream_datasets(self, start: tuple[str, str], levels: int) -> int:
        """How many datasets lie within `levels` flows downstream of `start` (itself not
        counted): the impact report's dataset rows."""
        if start not in self.flows:
            return 0
        return len(nx.single_source_shortest_path_length(self.flows, start, cutoff=levels)) - 1

    def dataset_fields(self, dataset: tuple[str, str], levels: int) -> int:
        """The field graph upstream of every field of the dataset."""
        starts = [n for n in self.fields_upstream if n[:2] == dataset]
        return self.walk(self.fields_upstream, starts, levels)


def build_queries(
    truth: dict[str, Any], graphs: Graphs, latest_run: str | None = None
) -> list[Query]:
    """The measured set: upstream and downstream at every depth, each with every run listed
    and collapsed by run, `both`, rollup, the Marquez graphs, the field queries, lineage
    diffs, and run lineage from `latest_run` (the mart job's latest run) when given."""
    start, end = truth["window"]
    window = {"start": start, "end": end}
    targets = truth["targets"]
    queries: list[Query] = []

    def dataset(direction: str, levels: int, label: str = "", **extra: Any) -> None:
        ns, name = targets[direction]
        queries.append(
            Query(
                f"dataset {direction} levels={levels}{label}",
                f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}/lineage",
                {**window, "levels": levels, "direction": direction, **extra},
                partial(graphs.dataset, (ns, name), direction, levels),
            )
        )

    for direction in ("upstream", "downstream"):
        for levels in LEVELS:
            dataset(direction, levels)
            if levels > 1:
                dataset(direction, levels, " collapse=run", collapse="run")
        dataset(direction, 10, " rollup", rollup="workflow")
        dataset(direction, 10, " rollup collapse=run", rollup="workflow", collapse="run")
    ns, name = targets["downstream"]
    queries.append(
        Query(
            "impact landing levels=10 csv",
            f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}/impact",
            {**window, "levels": 10, "format": "csv"},
            partial(graphs.downstream_datasets, (ns, name), 10),
        )
    )
    for levels in (1, 5, 10):
        dataset("both", levels)
    dataset("both", 10, " collapse=run", collapse="run")
    dataset("both", 10, " rollup", rollup="workflow")

    ns, name = targets["upstream"]
    job_ns, job_name = targets["upstream_job"]
    queries.append(
        Query(
            "marquez lineage depth=10",
            "/api/v1/lineage",
            {"nodeId": f"dataset:{ns}:{name}", "depth": 10},
            partial(graphs.dataset, (ns, name), "both", 10),
        )
    )
    queries.append(
        Query(
            "marquez lineage job depth=10",
            "/api/v1/lineage",
            {"nodeId": f"job:{job_ns}:{job_name}", "depth": 10},
            partial(graphs.walk, graphs.accesses, [("job", job_name)], 20),
        )
    )
    queries.append(
        Query(
            "marquez column-lineage depth=10",
            "/api/v1/column-lineage",
            {"nodeId": f"dataset:{ns}:{name}", "depth": 10},
            partial(graphs.dataset_fields, (ns, name), 10),
        )
    )
    queries += _history_queries(truth, graphs, latest_run)
    ns, name, field_name = targets["field"]
    base = f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}"
    queries.append(
        Query(
            "field paths",
            f"{base}/fields/{_seg(field_name)}/lineage",
            window,
            partial(graphs.field_summary, (ns, name, field_name), "incoming", 1),
        )
    )
    for direction in ("incoming", "both"):
        queries.append(
            Query(
                f"field summary {direction} levels=3",
                f"{base}/lineage/fields/{_seg(field_name)}",
                {**window, "direction": direction, "levels": 3},
                partial(graphs.field_summary, (ns, name, field_name), direction, 3),
            )
        )
    return queries


def _history_queries(truth: dict[str, Any], graphs: Graphs, latest_run: str | None) -> list[Query]:
    """Lineage diffs of the mart (the window's first half against its second) and run
    lineage from the mart job's latest run. Their baselines walk the same datasets in
    memory: the diff's two walks, the run's one walk of as many levels. (A `both` diff costs
    two `both` walks, seconds on the medium workload: it is left out.)"""
    start, end = (datetime.fromisoformat(at.replace("Z", "+00:00")) for at in truth["window"])
    middle = start + (end - start) / 2
    halves = {
        "from": f"{start.isoformat()}..{middle.isoformat()}",
        "to": f"{middle.isoformat()}..{end.isoformat()}",
    }
    targets = truth["targets"]

    def diff(direction: str) -> Query:
        ns, name = targets[direction]
        return Query(
            f"lineage diff {direction} levels=10",
            f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}/lineage/diff",
            {**halves, "direction": direction, "levels": 10},
            lambda: 2 * graphs.dataset((ns, name), direction, 10),
        )

    queries = [diff("upstream"), diff("downstream")]
    ns, name = targets["upstream"]
    if latest_run is not None:
        queries += [
            Query(
                f"run lineage {direction} levels=5",
                f"/v3/runs/{latest_run}/lineage",
                {"direction": direction, "levels": 5},
                partial(graphs.dataset, (ns, name), "upstream", 5),
            )
            for direction in ("upstream", "both")
        ]
    return queries


def latest_run(url: str, job: Sequence[str]) -> str | None:
    """The id of `job`'s run that started last, read from the store before the clock runs."""
    store = Store(url, timeouts=LONG_WORK)
    try:
        with store.read() as conn:
            runs = t.runs.c
            query = (
                sa.select(runs.id)
                .where(runs.job_id == JobRef(job[0], job[1]).id, runs.started_at.is_not(None))
                .order_by(runs.started_at.desc())
                .limit(1)
            )
            found = conn.execute(query).scalar()
    finally:
        store.dispose()
    return str(found) if found is not None else None


def _seg(text: str) -> str:
    return quote(text, safe="")


def _parsed(body: bytes) -> Any:
    """An answer's document: JSON, or an impact report's CSV as `{"rows": [...]}`."""
    if body.startswith((b"{", b"[")):
        return json.loads(body)
    return {"rows": list(csv.DictReader(io.StringIO(body.decode("utf-8"))))}


def answer_size(document: Any) -> tuple[int, int]:
    """(datasets, relations) an answer holds: for dataset lineage its datasets and relations;
    for the Marquez graphs its dataset (or field) nodes and edges; for field paths the paths;
    for a field summary its datasets and the fields listed under them."""
    if not isinstance(document, dict):
        return 0, len(document) if isinstance(document, list) else 0
    if "relations" in document:
        return len(document.get("data", {})), len(document["relations"])
    if "kept" in document:  # a diff: both sides' datasets, every relation compared
        changed = [document[side]["relations"] for side in ("added", "removed")]
        return len(document["data"]), len(document["kept"]) + sum(map(len, changed))
    if "datasetVersions" in document:  # run lineage: versions between runs, reads and writes
        return len(document["datasetVersions"]), len(document["edges"])
    if "graph" in document:
        nodes = document["graph"]
        return (
            sum(1 for n in nodes if n.get("type") in ("DATASET", "DATASET_FIELD")),
            sum(len(n.get("outEdges", ())) for n in nodes),
        )
    if "paths" in document:
        return 0, len(document["paths"])
    if "rows" in document:  # an impact report: its dataset rows, and all its rows
        rows = document["rows"]
        return sum(1 for row in rows if row["kind"] == "dataset"), len(rows)
    sides = [v for v in document.values() if isinstance(v, list)]
    return (
        sum(len(side) for side in sides),
        sum(len(entry.get("fields", ())) for side in sides for entry in side),
    )


def _timed(function: Callable[[], Any], repetitions: int) -> tuple[list[float], Any]:
    result = function()  # warm-up
    samples = []
    for _ in range(repetitions):
        started = time.perf_counter()
        result = function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples, result


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def load_store(url: str, data_dir: Path, batch: int = 1000, shuffle: int | None = None) -> None:
    """Fill the database through the in-process ingestion path (fastest to set up); with
    `shuffle`, one event per transaction in the order that seed shuffles them into (a run's
    lineage must not depend on the order its events arrive in). Statements may take minutes:
    on a busy machine a batch of 1,000 heavy events passed the server's 30 s deadline."""
    store = Store(url, timeouts=LONG_WORK)
    try:
        if shuffle is not None:
            documents = [json.loads(line) for line in read_events(data_dir)]
            random.Random(shuffle).shuffle(documents)
            for document in documents:
                ingest_documents(store, [document], batch=False)
            return
        for chunk in in_chunks(read_events(data_dir), batch):
            ingest_documents(store, [json.loads(line) for line in chunk], batch=True)
    finally:
        store.dispose()


def analyze(url: str) -> None:
    """Refresh the planner's statistics, as an operator does after a bulk load (PostgreSQL's
    autovacuum gets there on its own, later)."""
    store = Store(url, timeouts=LONG_WORK)
    try:
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()
    finally:
        store.dispose()


@dataclass
class QueryRun:
    """The measured queries, and the memory of the server's workers once they were answered."""

    rows: list[dict[str, Any]]
    #: MB: the largest worker's resident memory after the queries, and its peak.
    worker_memory_mb: dict[str, float]
    #: The graph index of this store (`index_figures`), and the `/health` round trip in ms.
    index: dict[str, float] = field(default_factory=dict)
    #: The queries that were not answered (e.g. past the statement timeout), and why.
    failed: dict[str, str] = field(default_factory=dict)


def index_figures(url: str) -> dict[str, float]:
    """The graph index of the store at `url`, loaded in this process as a worker loads it:
    seconds the load takes, its rows, and the bytes its columns hold — each flow row and
    each relation with its share of the adjacency that finds it."""
    store = Store(url, timeouts=LONG_WORK)
    try:
        with store.read() as conn:
            started = time.perf_counter()
            graph = load_index(conn, position(conn))
            seconds = time.perf_counter() - started
    finally:
        store.dispose()
    flow_rows, relation_rows = len(graph.flows), len(graph.relations)
    by_flow = graph.flows.nbytes + _adjacency_bytes(graph.by_source, graph.by_target)
    by_relation = graph.relations.nbytes + _adjacency_bytes(
        graph.by_dataset, graph.by_job, graph.by_run
    )
    return {
        "load_s": seconds,
        "flow_rows": flow_rows,
        "relations": relation_rows,
        "bytes_per_flow": by_flow / max(flow_rows, 1),
        "bytes_per_relation": by_relation / max(relation_rows, 1),
        "column_mb": graph.nbytes / 1e6,
    }


def _adjacency_bytes(*found: Adjacency) -> int:
    return sum(a.nbytes for a in found)


def command_line_lineage(
    url: str, truth: dict[str, Any], work_dir: Path, repetitions: int = 5
) -> dict[str, float]:
    """`upstream lineage --db URL` upstream of the mart at levels=10, end to end in a fresh
    process each time (start-up, the schema check, the index's load, the walk, the answer
    written as JSON): the median wall seconds and CPU seconds the command used, beside its
    limit measured in the same run, a bare interpreter's start (`python -c pass`) plus the
    database's own time to hand over the rows the index is made of (`rows_read_seconds`).

    The command runs as an installed one does, from compiled bytecode (kept under
    `work_dir`, whatever PYTHONDONTWRITEBYTECODE says); a first run, not counted, compiles
    it and warms the database's caches."""
    ns, name = truth["targets"]["upstream"]
    start, end = truth["window"]
    command = [sys.executable, "-m", "upstream", "lineage", ns, name, "--direction", "upstream"]
    command += ["--levels", "10", "--start", start, "--end", end, "--db", url, "-f", "json"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work_dir / "pycache")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    times: dict[str, list[float]] = {"cli": [], "cpu": [], "python": [], "rows": []}
    for _ in range(repetitions):  # interleaved: a load change touches each alike
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        times["cli"].append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        times["python"].append(time.perf_counter() - started)
        times["rows"].append(rows_read_seconds(url))
    median = {name: statistics.median(found) for name, found in times.items()}
    limit = median["python"] + median["rows"]
    return {
        "cli_s": median["cli"],
        "cli_cpu_s": median["cpu"],
        "cli_python_s": median["python"],
        "cli_rows_s": median["rows"],
        "cli_limit_s": limit,
        "cli_ratio": median["cli"] / limit,
        "cli_target_s": CLI_TARGET_S,
    }


def rows_read_seconds(url: str) -> float:
    """Seconds the database takes to hand over, in one snapshot, every row a dataset walk's
    index is made of (the readers of `store.graph_rows`, nothing numbered or packed): what
    any load of that index costs at least."""
    store = Store(url, timeouts=LONG_WORK)
    try:
        with store.read() as conn:
            started = time.perf_counter()
            for table in (t.datasets, t.jobs):
                graph_rows.entity_ids(conn, table)
            graph_rows.deleted_ids(conn)
            readers = (
                graph_rows.run_rows,
                graph_rows.relation_rows,
                graph_rows.flow_rows,
                graph_rows.job_edge_rows,
            )
            for reader in readers:
                for _ in reader(conn):
                    pass
            return time.perf_counter() - started
    finally:
        store.dispose()


def health_round_trip(client: httpx.Client, repetitions: int) -> float:
    """Median ms of `/health`: what HTTP and the server's middleware cost a request."""
    samples, _ = _timed(lambda: client.get("/health").raise_for_status(), max(repetitions, 50))
    return statistics.median(samples)


def judged(row: dict[str, Any], health_ms: float) -> dict[str, Any]:
    """`row` with its target and the walk limit (`WALK_FACTOR` x walk + `/health`)."""
    limit = WALK_FACTOR * row["baseline_median_ms"] + health_ms
    target = TARGETS.get(row["query"])
    return {
        **row,
        "health_ms": health_ms,
        "walk_limit_ms": limit,
        "within_walk_limit": row["median_ms"] <= limit,
        "target_ms": target,
        "meets_target": None if target is None else row["median_ms"] <= target,
    }


def run_queries(
    kind: str,
    data_dir: Path,
    work_dir: Path,
    *,
    repetitions: int = 20,
    workers: int = 2,
    processes: int = 1,
    url: str | None = None,
    only: Sequence[str] = (),
) -> QueryRun:
    """Latency of every query on a `kind` database holding the workload: the one at `url`,
    else a fresh one loaded through the in-process path. Queries are asked one at a time, of
    the first server when there are several `processes`."""
    if url is None:
        with fresh_database(kind, f"{data_dir.name}_queries_{kind}", work_dir) as fresh:
            load_store(fresh, data_dir)
            return run_queries(
                kind, data_dir, work_dir,
                repetitions=repetitions, workers=workers, processes=processes, url=fresh,
                only=only,
            )  # fmt: skip
    truth = load_truth(data_dir)
    graphs = Graphs(truth)
    run = latest_run(url, truth["targets"]["upstream_job"])
    queries = [
        q for q in build_queries(truth, graphs, run) if not only or any(o in q.name for o in only)
    ]
    # The truth's millions of objects live until the end: frozen, the collector stops
    # scanning them during the timed calls (it added hundreds of ms to some samples).
    gc.collect()
    gc.freeze()
    analyze(url)
    figures = {**index_figures(url), **command_line_lineage(url, truth, work_dir)}
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    with (
        Server(url, work_dir, workers, processes=processes) as server,
        httpx.Client(base_url=server.url, timeout=300) as client,
    ):
        health_ms = health_round_trip(client, repetitions)
        for query in queries:

            def ask(q: Query = query) -> bytes:
                response = client.get(q.path, params=q.params)
                response.raise_for_status()
                return response.content  # the whole answer received; parsed untimed

            try:
                samples, body = _timed(ask, repetitions)
            except httpx.HTTPStatusError as exc:  # noted, and the other queries still run
                failed[query.name] = f"HTTP {exc.response.status_code}: {exc.response.text[:200]}"
                continue
            answer = _parsed(body)
            walk, walked = _timed(query.baseline, repetitions)
            median = statistics.median(samples)
            walk_median = statistics.median(walk)
            datasets, relations = answer_size(answer)
            rows.append(
                {
                    "db": kind,
                    "query": query.name,
                    "datasets": datasets,
                    "relations": relations,
                    "bytes": len(body),
                    "truncated": bool(isinstance(answer, dict) and answer.get("truncated")),
                    "median_ms": median,
                    "p95_ms": _p95(samples),
                    "max_ms": max(samples),
                    "baseline_median_ms": walk_median,
                    "baseline_size": walked,
                    "ratio": median / walk_median if walk_median else 0.0,
                    "load": [round(x, 2) for x in os.getloadavg()],
                }
            )
        memory = server.worker_memory_mb()
    rows = [judged(row, health_ms) for row in rows]
    return QueryRun(rows, memory, {**figures, "health_ms": health_ms}, failed)
