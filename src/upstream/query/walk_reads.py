"""What a rolled-up dataset-lineage walk reads, fetched up front for every level at once
(design §6: walks in one round trip).

`store.walks.reach` tells in one recursive statement which datasets and jobs a walk of
`levels` levels processes; `prefetch` then reads each kind of row the walk asks for (access
relations, flows, job-end edges, the relations that carry components) for all of them, one
statement per kind. The walk's level loop then asks this object instead of the database.
An id that the prefetch did not cover (a temporary dataset a rolled-up walk passes through
within one level) is read when asked and remembered, so the answer never depends on the
prefetch being complete; only the number of statements does.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Direction, Step
from upstream.model.flow_rules import Flow
from upstream.model.window import Window
from upstream.query.keyed_rows import KeyedRows
from upstream.query.relations import (
    Relation,
    RelationKey,
    declared_relations_of_jobs,
    named_component_relations,
    relations_of_datasets,
    relations_of_jobs,
    relations_of_runs,
)
from upstream.store.deletion import not_deleted
from upstream.store.dialect import id_filters
from upstream.store.walks import flow_set, reach
from upstream.store.window import edges_as_of, run_in_window


class JobFeed(NamedTuple):
    """A job-end edge seen from its near end (upstream: the edge's target): the far end is
    a job (`far_job`) or a dataset (`far_dataset`); `job_id`/`run_id` are the job end's."""

    near: uuid.UUID
    far_dataset: uuid.UUID | None
    far_job: uuid.UUID | None
    job_id: uuid.UUID
    run_id: uuid.UUID | None


class WalkReads:
    """The rows one walk reads, within one window, kept for the walk's duration."""

    def __init__(self, conn: Connection, window: Window, mode: Direction) -> None:
        self.conn = conn
        self.window = window
        self.mode = mode
        near_access = "write" if mode == "upstream" else "read"
        self._near = KeyedRows(
            lambda ids: relations_of_datasets(conn, ids, window, near_access),
            lambda r: r.dataset_id,
        )
        self._of_datasets = KeyedRows(
            lambda ids: relations_of_datasets(conn, ids, window), lambda r: r.dataset_id
        )
        self._of_jobs = KeyedRows(
            lambda ids: relations_of_jobs(conn, ids, window), lambda r: r.job_id
        )
        self._of_runs = KeyedRows(lambda ids: relations_of_runs(conn, ids, window), _run_of)
        self._named = KeyedRows(
            lambda ids: named_component_relations(conn, ids, window), lambda r: r.dataset_id
        )
        self._declared = KeyedRows(
            lambda ids: declared_relations_of_jobs(conn, ids, window), lambda r: r.job_id
        )
        direction: Step = "upstream" if mode == "upstream" else "downstream"
        self._flows = KeyedRows(
            lambda ids: flow_set(conn, ids, direction, window),
            (lambda f: f.target) if mode == "upstream" else (lambda f: f.source),
        )
        self._feeds_datasets = KeyedRows(lambda ids: self._job_feeds(ids, "dataset"), _near_of)
        self._feeds_jobs = KeyedRows(lambda ids: self._job_feeds(ids, "job"), _near_of)

    # -- the prefetch ----------------------------------------------------------------------

    def prefetch(self, seed: uuid.UUID, levels: int) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
        """Read everything a walk of `levels` levels from `seed` asks for; return the
        datasets and the runs it read about (for the rollup's own prefetch)."""
        reached = reach(self.conn, seed, self.mode, levels, self.window)
        datasets = {node for kind, node in reached if kind == "dataset"}
        jobs = {node for kind, node in reached if kind == "job"}
        if self.mode == "both":
            relations = self._of_jobs.get(jobs) + self._of_datasets.get(datasets)
            return {r.dataset_id for r in relations}, {r.run_id for r in relations if r.run_id}
        near = self._near.get(datasets)
        found = self._flows.get(datasets)
        feeds = self._feeds_datasets.get(datasets)
        feeds += self._feeds_jobs.get(jobs | {f.job_id for f in feeds})
        runs = {f.run_id for f in found} | {f.run_id for f in feeds} | {r.run_id for r in near}
        self._declared.fetch({f.job_id for f in found if f.run_id is None and f.job_id})
        self._declared.fetch({f.job_id for f in feeds if f.run_id is None})
        ends = {f.source for f in found} | {f.target for f in found}
        ends |= {f.far_dataset for f in feeds if f.far_dataset is not None}
        self._named.fetch(datasets | ends)
        return datasets | ends, {r for r in runs if r is not None}

    # -- what the walk asks -----------------------------------------------------------------

    def relations_of_datasets(
        self, ids: Collection[uuid.UUID], near_only: bool = False
    ) -> set[Relation]:
        """Relations of `ids` in the window: all of them, or only the near access (the
        writers upstream, the readers downstream)."""
        return set((self._near if near_only else self._of_datasets).get(ids))

    def relations_of_jobs(self, ids: Collection[uuid.UUID]) -> set[Relation]:
        return set(self._of_jobs.get(ids))

    def relations_of_runs(self, ids: Collection[uuid.UUID]) -> set[Relation]:
        return set(self._of_runs.get(ids))

    def flows(self, ids: Collection[uuid.UUID]) -> list[Flow]:
        """Flows into (upstream) or out of (downstream) `ids` in the window."""
        return self._flows.get(ids)

    def feeds_of_datasets(self, ids: Collection[uuid.UUID]) -> list[JobFeed]:
        """Job-end edges whose near end is one of the datasets `ids` and far end a job."""
        return self._feeds_datasets.get(ids)

    def feeds_of_jobs(self, ids: Collection[uuid.UUID]) -> list[JobFeed]:
        """Job-end edges whose near end is one of the jobs `ids`."""
        return self._feeds_jobs.get(ids)

    def components_of(self, keys: Collection[RelationKey]) -> dict[RelationKey, set[str]]:
        """The components stored on each of `keys` (keys with none are absent), read
        through the keys' datasets (only their keys with a named component) and, for
        declared keys, their jobs."""
        datasets = {dataset for dataset, _, _, _ in keys}
        declared = {job for _, job, run, _ in keys if run is None}
        found: dict[RelationKey, set[str]] = {}
        for relation in [*self._named.get(datasets), *self._declared.get(declared)]:
            key = relation[:4]
            if key in keys:
                found.setdefault(key, set()).add(relation.component)
        return found

    # -- statements -------------------------------------------------------------------------

    def _job_feeds(self, ids: set[uuid.UUID], near_type: str) -> list[JobFeed]:
        """Edges with a job end, from their near end (`near_type`: a dataset whose far end
        is a job, or a job with any far end), distinct."""
        e = edges_as_of(self.window).c
        near, far = ("target", "source") if self.mode == "upstream" else ("source", "target")

        def col(side: str, name: str) -> Any:
            return getattr(e, f"{side}_{name}")

        near_id = col(near, f"{near_type}_id")
        conditions = [col(near, "type") == near_type, run_in_window(e.run_id, self.window)]
        if near_type == "dataset":
            conditions.append(col(far, "type") == "job")
            job, run = col(far, "job_id"), col(far, "run_id")
        else:
            job, run = col(near, "job_id"), col(near, "run_id")
        far_dataset, far_job = col(far, "dataset_id"), col(far, "job_id")
        found: list[JobFeed] = []
        for matches in id_filters(self.conn, near_id, ids):
            query = sa.select(near_id, far_dataset, far_job, job, run).where(
                matches, *conditions, not_deleted(far_dataset, far_job, job)
            )
            found.extend(map(JobFeed._make, self.conn.execute(query.distinct()).all()))
        return found


def _run_of(relation: Relation) -> uuid.UUID:
    assert relation.run_id is not None
    return relation.run_id


def _near_of(feed: JobFeed) -> uuid.UUID:
    return feed.near
