"""Workflow runs and temporary datasets (design §3.4) for the answers that speak in ids: a
job's contents, a job's lineage, the temporary datasets an answer marks. Read from the graph
index (`upstream.query.graph_index.workflows`), whose numbers are turned into ids here for
the runs and datasets asked about only.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable

import numpy as np
import numpy.typing as npt

from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import WalkView, distinct_numbers
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.numbering import NONE, Numbering

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]


def _numbers(numbering: Numbering, texts: Iterable[str | None]) -> Ints:
    """The numbers of `texts` (NONE for None or an id the index does not hold)."""
    found = (NONE if text is None else numbering.known(text) for text in texts)
    return np.fromiter((NONE if n is None else n for n in found), dtype=np.int64)


def members(graph: Graph, job_ids: Collection[uuid.UUID], window: Window) -> set[uuid.UUID]:
    """The runs whose workflow run is a run of one of `job_ids` (those runs included when
    they are their own workflow run), below a run of those jobs that overlaps `window` or is
    known only as a parent (no events of its own)."""
    jobs = _numbers(graph.ids.jobs, (str(j) for j in job_ids))
    jobs = jobs[jobs != NONE]
    if not len(jobs):
        return set()
    flows_of = graph.workflows
    every = np.arange(len(flows_of.run_job), dtype=np.int64)
    found = flows_of.members(jobs, WalkView(graph, window).run_in_window(every))
    texts = graph.ids.runs.texts
    return {uuid.UUID(texts[run]) for run in found.tolist()}


def workflow_runs(graph: Graph, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
    """The workflow run of each run of `run_ids` that is in one (`model.workflow`)."""
    ordered = list(run_ids)
    links = graph.workflows.workflow_of(_numbers(graph.ids.runs, (str(r) for r in ordered)))
    texts = graph.ids.runs.texts
    return {
        run: uuid.UUID(texts[link])
        for run, link in zip(ordered, links.tolist(), strict=True)
        if link != NONE
    }


def marked_temporary(graph: Graph, dataset_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Which of `dataset_ids` some run marks temporary (`datasetType`, the recorder's
    `temporary=True`), in a workflow or not: those `rollup=jobs` leaves out too."""
    ordered = list(dataset_ids)
    marked = graph.workflows.marked(_numbers(graph.ids.datasets, (str(d) for d in ordered)))
    return {dataset for dataset, flag in zip(ordered, marked.tolist(), strict=True) if flag}


def temporary_datasets(graph: Graph, datasets: Ints, runs: Ints) -> Flags:
    """Which relations (each one's dataset and run number, NONE for none) have a dataset
    temporary to the workflow run of one of the relations' runs, or that a producer marks
    temporary in any run (`datasetType` TEMPORARY or JOB_OUTPUT, the recorder's
    `temporary=True`): the UI draws them all dashed. Only the relations of datasets that
    may be temporary (a mark, a name ending with a run id) have their runs' workflow runs
    looked at."""
    distinct, inverse = distinct_numbers(datasets, len(graph.ids.datasets))
    held = inverse != NONE  # a dataset the index does not hold is temporary to no run
    inverse = np.where(held, inverse, 0)
    flows_of = graph.workflows
    temporary = flows_of.marked(distinct)
    candidate = (flows_of.may_be_temporary(distinct) & ~temporary)[inverse] & held
    if candidate.any():
        links = flows_of.workflow_of(runs[candidate])
        found = flows_of.temporary(datasets[candidate], links.astype(np.int64))
        temporary[inverse[candidate][found]] = True
    shown: Flags = held & temporary[inverse] if len(distinct) else held
    return shown
