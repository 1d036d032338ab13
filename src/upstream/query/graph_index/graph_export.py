"""The rows of the whole lineage graph (`upstream.query.whole_graph`, `upstream export`) read
from the graph index: the flows out of a set of datasets and every edge with a job end, in a
window (every run without one), ids as their hyphenated text."""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np

from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import WalkView
from upstream.query.graph_index.graph import JOB, Graph
from upstream.query.graph_index.numbering import NONE


class FlowRow(NamedTuple):
    """A flow: data of `source` went into `target` through `job` in `run` (None: declared)."""

    source: str
    target: str
    job: str | None
    run: str | None
    inferred: bool


class EdgeEnd(NamedTuple):
    """One end of an edge: a dataset or a job, by id."""

    kind: str
    id: str | None


def flows_out_of(graph: Graph, datasets: Collection[str], window: Window | None) -> set[FlowRow]:
    """Every flow out of any of `datasets` in `window`, none through a deleted dataset or
    job."""
    view = WalkView(graph, window)
    known = (graph.ids.datasets.known(d) for d in datasets)
    nodes = np.array(sorted({n for n in known if n is not None}), dtype=np.int64)
    rows, _ = view.all_flows(graph.by_source, nodes)
    f = graph.flows
    source, target, job = (f[c][rows].astype(np.int64) for c in ("source", "target", "job"))
    keep = view.live_datasets(source) & view.live_datasets(target) & view.live_jobs(job)
    rows = rows[keep]
    dataset_texts, job_texts, run_texts = (
        graph.ids.datasets.texts,
        graph.ids.jobs.texts,
        graph.ids.runs.texts,
    )
    return {
        FlowRow(
            dataset_texts[s],
            dataset_texts[t],
            None if j == NONE else job_texts[j],
            None if r == NONE else run_texts[r],
            bool(inferred),
        )
        for s, t, j, r, inferred in zip(
            *(f[c][rows].tolist() for c in ("source", "target", "job", "run", "inferred")),
            strict=True,
        )
    }


def job_edges(graph: Graph, window: Window | None) -> set[tuple[EdgeEnd, EdgeEnd]]:
    """The distinct ends of every edge with a job end and no field end, in `window`
    (deleted entities included: the caller shows only what it lists)."""
    view = WalkView(graph, window)
    e = graph.edges
    rows = e.held
    keep = view.in_force(e, rows, e["of_run"]) & view.run_in_window(e["run"].astype(np.int64))
    rows = rows[keep & ~e["fields"]]
    dataset_texts, job_texts = graph.ids.datasets.texts, graph.ids.jobs.texts

    def end(kind: int, dataset: int, job: int) -> EdgeEnd:
        if kind == JOB:
            return EdgeEnd("job", None if job == NONE else job_texts[job])
        return EdgeEnd("dataset", None if dataset == NONE else dataset_texts[dataset])

    columns = [
        e[c][rows].tolist()
        for c in (
            "source_type",
            "source_dataset",
            "source_job",
            "target_type",
            "target_dataset",
            "target_job",
        )
    ]
    return {
        (end(st, sd, sj), end(tt, td, tj)) for st, sd, sj, tt, td, tj in zip(*columns, strict=True)
    }
