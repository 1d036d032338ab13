"""The rows of whole frontiers that the answers built around a walk read (a job's lineage, an
impact's readers), answered from the graph index (design §6): access relations, flows and
job-end edges in the walk's window, as of its time, never through anything deleted.

Those answers work on uuids (`query.relations.Relation`, `model.flow_rules.Flow`), so the
index's numbers are turned back into ids here, for the rows asked about only.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Direction
from upstream.model.flow_rules import Flow
from upstream.model.window import Window
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.dataset_walk import WalkView
from upstream.query.graph_index.graph import DATASET, JOB, Graph
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.query.relations import Relation, RelationKey

Ints = npt.NDArray[np.int64]


class JobFeed(NamedTuple):
    """A job-end edge seen from its near end (upstream: the edge's target): the far end is
    a job (`far_job`) or a dataset (`far_dataset`); `job_id`/`run_id` are the job end's."""

    near: uuid.UUID
    far_dataset: uuid.UUID | None
    far_job: uuid.UUID | None
    job_id: uuid.UUID
    run_id: uuid.UUID | None


class WalkReads:
    """The rows one walk reads, within one window, from one version of the index."""

    def __init__(self, graph: Graph, window: Window, mode: Direction) -> None:
        self.graph = graph
        self.view = WalkView(graph, window)
        self.window = window
        self.mode = mode
        self.near, self.far = ("target", "source") if mode == "upstream" else ("source", "target")
        self.dataset_ids = _Ids(graph.ids.datasets)
        self.job_ids = _Ids(graph.ids.jobs)
        self.run_ids = _Ids(graph.ids.runs)

    # -- relations ---------------------------------------------------------------------------

    def relations_of_datasets(
        self, ids: Collection[uuid.UUID], near_only: bool = False
    ) -> set[Relation]:
        """Relations of `ids` in the window: all of them, or only the near access (the
        writers upstream, the readers downstream)."""
        rows = self._relations(self.graph.by_dataset, self._numbers(self.graph.ids.datasets, ids))
        if near_only:
            rows = rows[self.graph.relations["write"][rows] == (self.mode == "upstream")]
        return self._as_relations(rows)

    def relation_rows_of_datasets(self, numbers: Ints) -> Ints:
        """The positions in `graph.relations` of the relations of the datasets numbered
        `numbers` (sorted, distinct) in the window: for an answer that works on the
        index's columns and names only what it shows."""
        return self._relations(self.graph.by_dataset, numbers)

    def relations_of_jobs(self, ids: Collection[uuid.UUID]) -> set[Relation]:
        return self._as_relations(
            self._relations(self.graph.by_job, self._numbers(self.graph.ids.jobs, ids))
        )

    def relations_of_runs(self, ids: Collection[uuid.UUID]) -> set[Relation]:
        return self._as_relations(
            self._relations(self.graph.by_run, self._numbers(self.graph.ids.runs, ids))
        )

    def components_of(self, keys: Collection[RelationKey]) -> dict[RelationKey, set[str]]:
        """The components stored on each of `keys` in the window (keys with none stored are
        absent; a key whose rows are all unnamed shows "" either way)."""
        found: dict[RelationKey, set[str]] = {}
        datasets = {dataset for dataset, _, _, _ in keys}
        for relation in self.relations_of_datasets(datasets):
            key = relation[:4]
            if key in keys:
                found.setdefault(key, set()).add(relation.component)
        return found

    # -- flows and job-end edges -------------------------------------------------------------

    def flows(self, ids: Collection[uuid.UUID]) -> list[Flow]:
        """Flows into (upstream) or out of (downstream) `ids` in the window."""
        graph, f = self.graph, self.graph.flows
        by = graph.by_target if self.mode == "upstream" else graph.by_source
        rows, _ = self.view.all_flows(by, self._numbers(graph.ids.datasets, ids))
        keep = self.view.live_datasets(f["source"][rows].astype(np.int64))
        keep &= self.view.live_datasets(f["target"][rows].astype(np.int64))
        keep &= self.view.live_jobs(f["job"][rows].astype(np.int64))
        rows = rows[keep]
        datasets, jobs, run_ids = self.dataset_ids, self.job_ids, self.run_ids
        return list(
            {
                Flow(datasets.id(s), datasets.id(t), jobs(j), run_ids(r), bool(i))
                for s, t, j, r, i in zip(
                    f["source"][rows].tolist(),
                    f["target"][rows].tolist(),
                    f["job"][rows].tolist(),
                    f["run"][rows].tolist(),
                    f["inferred"][rows].tolist(),
                    strict=True,
                )
            }
        )

    def feeds_of_datasets(self, ids: Collection[uuid.UUID]) -> list[JobFeed]:
        """Job-end edges whose near end is one of the datasets `ids` and far end a job."""
        nodes = self._numbers(self.graph.ids.datasets, ids)
        rows, _ = self.view.edges(f"{self.near}_dataset", nodes, JOB)
        return self._feeds(rows, "dataset", self.far)

    def feeds_of_jobs(self, ids: Collection[uuid.UUID]) -> list[JobFeed]:
        """Job-end edges whose near end is one of the jobs `ids` (any far end)."""
        nodes = self._numbers(self.graph.ids.jobs, ids)
        rows = np.concatenate(
            [self.view.edges(f"{self.near}_job", nodes, kind)[0] for kind in (DATASET, JOB)]
        )
        return self._feeds(rows, "job", self.near)

    def _feeds(self, rows: Ints, near_type: str, job_side: str) -> list[JobFeed]:
        e = self.graph.edges
        near, far = self.near, self.far
        columns = {
            "near": e[f"{near}_{near_type}"][rows].astype(np.int64),
            "far_dataset": e[f"{far}_dataset"][rows].astype(np.int64),
            "far_job": e[f"{far}_job"][rows].astype(np.int64),
            "job": e[f"{job_side}_job"][rows].astype(np.int64),
            "run": e[f"{job_side}_run"][rows].astype(np.int64),
        }
        keep = self.view.live_datasets(columns["far_dataset"])
        keep &= self.view.live_jobs(columns["far_job"]) & self.view.live_jobs(columns["job"])
        near_ids = self.dataset_ids if near_type == "dataset" else self.job_ids
        datasets, jobs, runs = self.dataset_ids, self.job_ids, self.run_ids
        found = {
            (n, d, j, job, run)
            for n, d, j, job, run in zip(*(c[keep].tolist() for c in columns.values()), strict=True)
        }
        return [
            JobFeed(near_ids.id(n), datasets(d), jobs(j), jobs.id(job), runs(run))
            for n, d, j, job, run in found
        ]

    # -- numbers and ids ---------------------------------------------------------------------

    def _relations(self, by: Adjacency, nodes: Ints) -> Ints:
        """Relation rows keyed by `nodes` in force, in the window, nothing deleted."""
        rows, _ = self.view.relations(by, nodes)
        r = self.graph.relations
        keep = self.view.live_datasets(r["dataset"][rows].astype(np.int64))
        keep &= self.view.live_jobs(r["job"][rows].astype(np.int64))
        return rows[keep]

    def _as_relations(self, rows: Ints) -> set[Relation]:
        r, ids = self.graph.relations, self.graph.ids
        datasets, jobs, runs = self.dataset_ids, self.job_ids, self.run_ids
        components = ids.components.texts
        found: set[Relation] = set()
        for d, j, run, write, component in zip(
            r["dataset"][rows].tolist(),
            r["job"][rows].tolist(),
            r["run"][rows].tolist(),
            r["write"][rows].tolist(),
            r["component"][rows].tolist(),
            strict=True,
        ):
            found.add(
                Relation(
                    datasets.id(d),
                    jobs.id(j),
                    runs(run),
                    "write" if write else "read",
                    components[component],
                )
            )
        return found

    @staticmethod
    def _numbers(numbering: Numbering, ids: Collection[uuid.UUID]) -> Ints:
        numbers = (numbering.known(str(i)) for i in ids if i is not None)
        return np.array(sorted({n for n in numbers if n is not None}), dtype=np.int64)


class _Ids:
    """Numbers back to uuids, each made once per walk."""

    def __init__(self, numbering: Numbering) -> None:
        self.texts = numbering.texts
        self.made: dict[int, uuid.UUID] = {}

    def __call__(self, number: int) -> uuid.UUID | None:
        """The id numbered `number`; None for NONE."""
        return None if number == NONE else self.id(number)

    def id(self, number: int) -> uuid.UUID:
        found = self.made.get(number)
        if found is None:
            found = self.made[number] = uuid.UUID(self.texts[number])
        return found
