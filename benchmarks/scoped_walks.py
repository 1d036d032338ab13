"""What filtering by a token's namespaces costs a lineage answer (design §5): the same
dataset-lineage walks, a run-lineage walk, Marquez's graph and the whole graph, in process on
one loaded store, with a full token and with a token that reads only the warehouses and the
scheduler (`SCOPES`: the landing bucket is hidden). The figure is the ratio of the scoped
walk's median to the full walk's, measured in the same run; `LIMIT` is what it must stay
under."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from benchmarks.databases import fresh_database
from benchmarks.generator import load_truth
from benchmarks.queries import load_store
from upstream.model.access import EVERYTHING, Access, Visibility
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery, RunQuery
from upstream.query.marquez.lineage import lineage_graph as marquez_graph
from upstream.query.run_lineage import RunLineageParams, run_lineage
from upstream.query.whole_graph import lineage_graph
from upstream.store.engine import Store

#: The scoped token: every PostgreSQL namespace and the scheduler's jobs, not `s3://bucket`.
SCOPES = ("read:postgres://*", "read:airflow://*")
#: The scoped walk may cost at most this many times the full one.
LIMIT = 2.0
#: The walks measured: (label, the truth's start, direction).
WALKS = (
    ("upstream", "upstream", "upstream"),
    ("downstream", "both", "downstream"),
    ("both", "both", "both"),
)


def _median_seconds(work: Any, repetitions: int) -> tuple[float, Any]:
    samples, answer = [], None
    for _ in range(repetitions):
        started = time.perf_counter()
        answer = work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), answer


def _walks(truth: dict[str, Any]) -> list[tuple[str, Callable[[Connection, Visibility], Any], str]]:
    """Each answer measured: (label, the work with one visibility, the key of the list it
    shows): the dataset-lineage walks of `WALKS`, run lineage around a run that wrote the
    `both` target, Marquez's graph around that target, and the whole graph."""
    walks: list[tuple[str, Callable[[Connection, Visibility], Any], str]] = []
    for label, start, direction in WALKS:
        namespace, name = truth["targets"][start]
        query = LineageQuery(start="0", end="now", direction=direction, levels="10")
        params = LineageParams.parse(query, max_levels=100)

        def walk(
            conn: Connection,
            visibility: Visibility,
            ns: str = namespace,
            ds: str = name,
            asked: LineageParams = params,
        ) -> Any:
            return dataset_lineage(
                conn, ns, ds, asked, max_nodes=10**6, max_relations=10**7,
                visibility=visibility,
            )  # fmt: skip

        walks.append((f"{label} from {namespace} {name}", walk, "relations"))
    namespace, name = truth["targets"]["both"]
    run = min(
        row[3]
        for row in truth["accesses"]
        if (row[0], row[1], row[4]) == (namespace, name, "write")
    )
    asked = RunLineageParams.parse(run, RunQuery(levels="10"), max_levels=100)

    def runs(conn: Connection, visibility: Visibility) -> Any:
        return run_lineage(conn, asked, max_nodes=10**6, visibility=visibility)

    walks.append((f"run lineage both from a run writing {namespace} {name}", runs, "edges"))

    def marquez(conn: Connection, visibility: Visibility) -> Any:
        node = f"dataset:{namespace}:{name}"
        return marquez_graph(conn, node, 10, 10**6, None, visibility)

    walks.append((f"Marquez graph depth 10 around {namespace} {name}", marquez, "graph"))

    def whole(conn: Connection, visibility: Visibility) -> Any:
        return lineage_graph(conn, visibility=visibility)

    walks.append(("the whole graph", whole, "flows"))
    return walks


def measure(store: Store, truth: dict[str, Any], repetitions: int) -> list[dict[str, Any]]:
    """One row per answer: the medians with each token, their ratio, and what the scoped
    answer showed and hid."""
    scoped = Access.of_scopes(SCOPES).read
    rows = []
    for label, work, shown in _walks(truth):

        def timed(visibility: Visibility, work: Any = work) -> Any:
            with store.read() as conn:
                return work(conn, visibility)

        timed(EVERYTHING)  # the index loaded, and the namespaces column read, untimed
        timed(scoped)
        full_seconds, full = _median_seconds(lambda: timed(EVERYTHING), repetitions)
        scoped_seconds, answer = _median_seconds(lambda: timed(scoped), repetitions)
        rows.append(
            {
                "walk": label,
                "full_ms": round(full_seconds * 1000, 2),
                "scoped_ms": round(scoped_seconds * 1000, 2),
                "ratio": round(scoped_seconds / full_seconds, 2),
                "limit": LIMIT,
                "full_relations": len(full[shown]),
                "scoped_relations": len(answer[shown]),
                "hidden_nodes": answer.get("hiddenNodes", 0),
                "hidden_relations": answer.get("hiddenRelations", 0),
            }
        )
    return rows


def run_scoped_walks(data_dir: Path, work_dir: Path, repetitions: int) -> list[dict[str, Any]]:
    """Load the workload into a fresh SQLite database and measure every walk of `WALKS`."""
    with fresh_database("sqlite", f"{data_dir.name}_scoped", work_dir) as url:
        load_store(url, data_dir)
        store = Store(url)
        try:
            return measure(store, load_truth(data_dir), repetitions)
        finally:
            store.dispose()
