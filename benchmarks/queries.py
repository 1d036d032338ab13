"""Query latency against a live server, beside an in-memory networkx walk over the same edges.

Each query is asked once to warm up, then `repetitions` times; median and p95 are reported.
A sample is the request until the whole answer has arrived; the client parses it afterwards.
The baseline holds the ground truth in memory (built before the clock starts) and walks it
with networkx to the same depth, so the ratio says what the database, the HTTP layer and the
lineage rules cost over a plain graph walk.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import networkx as nx

from benchmarks.databases import fresh_database
from benchmarks.generator import load_truth, read_events
from benchmarks.server import Server
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store

LEVELS = (1, 5, 10, 20)
DIRECTIONS = ("both", "upstream", "downstream")


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

    def walk(self, graph: nx.Graph, start: tuple[str, ...], radius: int) -> int:
        """Nodes within `radius` hops and the runs on the edges between them."""
        if start not in graph:
            return 0
        reached = nx.ego_graph(graph, start, radius=radius)
        return int(sum(len(data.get("runs", ())) for _, _, data in reached.edges(data=True)))

    def dataset(self, start: tuple[str, str], direction: str, levels: int) -> int:
        if direction == "both":  # dataset -> jobs -> datasets is one level
            return self.walk(self.accesses, start, 2 * levels)
        graph = self.upstream if direction == "upstream" else self.flows
        return self.walk(graph, start, levels)

    def field_summary(self, start: tuple[str, str, str], levels: int) -> int:
        return self.walk(self.fields_upstream, start, levels)


def build_queries(truth: dict[str, Any], graphs: Graphs) -> list[Query]:
    start, end = truth["window"]
    window = {"start": start, "end": end}
    targets = truth["targets"]
    queries: list[Query] = []
    for direction in DIRECTIONS:
        ns, name = targets["downstream" if direction == "downstream" else direction]
        path = f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}/lineage"
        for levels in LEVELS:
            for rollup in (False, True):
                params = {**window, "levels": levels, "direction": direction}
                if rollup:
                    params["rollup"] = "workflow"
                label = f"dataset {direction} levels={levels}" + (" rollup" if rollup else "")
                queries.append(
                    Query(
                        label,
                        path,
                        params,
                        partial(graphs.dataset, (ns, name), direction, levels),
                    )
                )
    ns, name = targets["upstream"]
    queries.append(
        Query(
            "marquez lineage depth=10",
            "/api/v1/lineage",
            {"nodeId": f"dataset:{ns}:{name}", "depth": 10},
            lambda: graphs.dataset((ns, name), "both", 10),
        )
    )
    ns, name, field_name = targets["field"]
    base = f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}"
    queries.append(
        Query(
            "field paths",
            f"{base}/fields/{_seg(field_name)}/lineage",
            window,
            lambda: graphs.field_summary((ns, name, field_name), 1),
        )
    )
    queries.append(
        Query(
            "field summary incoming levels=3",
            f"{base}/lineage/fields/{_seg(field_name)}",
            {**window, "direction": "incoming", "levels": 3},
            lambda: graphs.field_summary((ns, name, field_name), 3),
        )
    )
    return queries


def _seg(text: str) -> str:
    return quote(text, safe="")


def _response_size(document: Any) -> int:
    """Relations, graph nodes, paths or summary entries: what the answer holds."""
    if isinstance(document, dict):
        for key in ("relations", "graph", "paths"):
            if key in document:
                return len(document[key])
        return sum(len(v) for v in document.values() if isinstance(v, list))
    return len(document) if isinstance(document, list) else 0


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


def load_store(url: str, data_dir: Path, batch: int = 1000) -> None:
    """Fill the database through the in-process ingestion path (fastest to set up)."""
    store = Store(url)
    try:
        lines = list(read_events(data_dir))
        for i in range(0, len(lines), batch):
            documents = [json.loads(line) for line in lines[i : i + batch]]
            ingest_documents(store, documents, batch=True)
    finally:
        store.dispose()


def analyze(url: str) -> None:
    """Refresh the planner's statistics, as an operator does after a bulk load (PostgreSQL's
    autovacuum gets there on its own, later)."""
    store = Store(url)
    try:
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()
    finally:
        store.dispose()


def run_queries(
    kind: str,
    data_dir: Path,
    work_dir: Path,
    *,
    repetitions: int = 20,
    workers: int = 2,
    url: str | None = None,
    only: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Latency of every query on a `kind` database holding the workload: the one at `url`,
    else a fresh one loaded through the in-process path."""
    if url is None:
        with fresh_database(kind, f"{data_dir.name}_queries_{kind}", work_dir) as fresh:
            load_store(fresh, data_dir)
            return run_queries(
                kind, data_dir, work_dir,
                repetitions=repetitions, workers=workers, url=fresh, only=only,
            )  # fmt: skip
    truth = load_truth(data_dir)
    graphs = Graphs(truth)
    queries = [
        q for q in build_queries(truth, graphs) if not only or any(o in q.name for o in only)
    ]
    # The truth's millions of objects live until the end: frozen, the collector stops
    # scanning them during the timed calls (it added hundreds of ms to some samples).
    gc.collect()
    gc.freeze()
    analyze(url)
    rows: list[dict[str, Any]] = []
    with (
        Server(url, work_dir, workers) as server,
        httpx.Client(base_url=server.url, timeout=300) as client,
    ):
        for query in queries:

            def ask(q: Query = query) -> bytes:
                response = client.get(q.path, params=q.params)
                response.raise_for_status()
                return response.content  # the whole answer received; parsed untimed

            samples, body = _timed(ask, repetitions)
            answer = json.loads(body)
            walk, walked = _timed(query.baseline, repetitions)
            median = statistics.median(samples)
            walk_median = statistics.median(walk)
            rows.append(
                {
                    "db": kind,
                    "query": query.name,
                    "size": _response_size(answer),
                    "truncated": bool(isinstance(answer, dict) and answer.get("truncated")),
                    "median_ms": median,
                    "p95_ms": _p95(samples),
                    "max_ms": max(samples),
                    "baseline_median_ms": walk_median,
                    "baseline_size": walked,
                    "ratio": median / walk_median if walk_median else 0.0,
                }
            )
    return rows
