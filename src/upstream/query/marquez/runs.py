"""Runs in Marquez's `Run` shape, with the dataset versions each run read and wrote.

A run's job version is derived, as Marquez derives it, from what the run touched: the same
job reading and writing the same datasets is the same version. Marquez keeps a table of job
versions; here the id is a UUIDv5 of the job and its sorted inputs and outputs, so any process
computes the same id from the stored relations.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound
from upstream.model.identity import stable_id
from upstream.model.ownership import own_and_facet_tags
from upstream.query.graph_index.index import dataset_names_by_id
from upstream.query.marquez.answers import RunAnswer, RunFacetsAnswer, RunsAnswer
from upstream.query.marquez.common import (
    Json,
    Page,
    iso,
    require_job,
    total,
)
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.packed_facets import unpack, unpacked_rows
from upstream.store.visibility import shown_namespaces

#: OpenLineage eventType -> Marquez RunState.
RUN_STATES = {
    "START": "RUNNING",
    "RUNNING": "RUNNING",
    "COMPLETE": "COMPLETED",
    "FAIL": "FAILED",
    "ABORT": "ABORTED",
    "OTHER": "OTHER",
}


@dataclass
class RunIO:
    """What one run read and wrote: (namespace, name, dataset id, version id, facets)."""

    inputs: list[tuple[str, str, uuid.UUID, uuid.UUID | None, Json]] = field(default_factory=list)
    outputs: list[tuple[str, str, uuid.UUID, uuid.UUID | None, Json]] = field(default_factory=list)

    def job_version(self, job_id: uuid.UUID) -> uuid.UUID:
        reads = sorted({str(d) for _, _, d, _, _ in self.inputs})
        writes = sorted({str(d) for _, _, d, _, _ in self.outputs})
        return stable_id("job_version", job_id, *reads, "->", *writes)


def run_io(conn: Connection, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, RunIO]:
    """Inputs and outputs of each run. An output's version is the one its run wrote; an
    input's is the newest version written before the run read it (None if never written)."""
    result: dict[uuid.UUID, RunIO] = defaultdict(RunIO)
    r, v = t.relations, t.dataset_versions
    read_version = (
        sa.select(v.c.id)
        .where(v.c.dataset_id == r.c.dataset_id, v.c.created_at <= r.c.event_time)
        .order_by(v.c.created_at.desc(), v.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    written_version = (
        sa.select(v.c.id)
        .where(v.c.dataset_id == r.c.dataset_id, v.c.run_id == r.c.run_id)
        .scalar_subquery()
    )
    rows: list[Any] = []
    for matches in id_filters(conn, r.c.run_id, run_ids):
        version = sa.case((r.c.access == "write", written_version), else_=read_version)
        query = sa.select(
            r.c.run_id, r.c.access, r.c.facets, r.c.dataset_id, version.label("version")
        ).where(matches)
        rows.extend(conn.execute(query).all())
    names = dataset_names_by_id(conn, {row.dataset_id for row in rows})
    for row, facets in zip(rows, unpack(conn, [row.facets for row in rows]), strict=True):
        io = result[row.run_id]
        side = io.inputs if row.access == "read" else io.outputs
        side.append((*names[row.dataset_id], row.dataset_id, row.version, facets))
    for io in result.values():
        io.inputs.sort(key=lambda x: (x[0], x[1]))
        io.outputs.sort(key=lambda x: (x[0], x[1]))
    return result


def run_docs(
    conn: Connection, run_ids: Collection[uuid.UUID], visibility: Visibility = EVERYTHING
) -> dict[uuid.UUID, Json]:
    """Marquez `Run` documents for `run_ids` (unknown ids are left out). A parent run of a
    job `visibility` does not show is no parent (`parentRunId` null): its id would point
    at what the reader may not see (the `parent` facet naming it goes in
    `upstream.query.hidden.without_hidden`)."""
    rows: list[Any] = []
    parent_run, parent_job = t.runs.alias("parent_run"), t.jobs.alias("parent_job")
    parent_shown = (
        sa.true() if visibility.everything else shown_namespaces(parent_job.c.namespace, visibility)
    )
    for matches in id_filters(conn, t.runs.c.id, run_ids):
        query = (
            sa.select(t.runs, t.jobs.c.namespace, t.jobs.c.name, parent_shown.label("parent_shown"))
            .join(t.jobs, t.jobs.c.id == t.runs.c.job_id)
            .outerjoin(parent_run, parent_run.c.id == t.runs.c.parent_run_id)
            .outerjoin(parent_job, parent_job.c.id == parent_run.c.job_id)
            .where(matches)
        )
        rows.extend(dict(row) for row in conn.execute(query).mappings())
    unpacked_rows(conn, t.runs, rows)
    io = run_io(conn, [row["id"] for row in rows])
    return {row["id"]: _run_doc(row, io.get(row["id"], RunIO())) for row in rows}


def _run_doc(row: Any, io: RunIO) -> Json:
    started, ended = row["started_at"], row["ended_at"]
    duration = None
    if started is not None and ended is not None:
        duration = int((ended - started).total_seconds() * 1000)
    return {
        "id": str(row["id"]),
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
        "nominalStartTime": iso(row["nominal_start"]),
        "nominalEndTime": iso(row["nominal_end"]),
        "state": RUN_STATES.get(row["state"] or "", "NEW"),
        "startedAt": iso(started),
        "endedAt": iso(ended),
        "durationMs": duration,
        "args": {},
        "jobVersion": {
            "namespace": row["namespace"],
            "name": row["name"],
            "version": str(io.job_version(row["job_id"])),
        },
        "inputDatasetVersions": [_version_ref(x) for x in io.inputs],
        "outputDatasetVersions": [_version_ref(x) for x in io.outputs],
        "context": {},
        "facets": row["facets"],
        "tags": own_and_facet_tags([], row["facets"]),
        "parentRunId": (
            str(row["parent_run_id"]) if row["parent_run_id"] and row["parent_shown"] else None
        ),
    }


def _version_ref(entry: tuple[str, str, uuid.UUID, uuid.UUID | None, Json]) -> Json:
    namespace, name, _, version, facets = entry
    return {
        "datasetVersionId": {
            "namespace": namespace,
            "name": name,
            "version": str(version) if version else None,
        },
        "facets": facets,
    }


def get_run(conn: Connection, run_id: uuid.UUID, visibility: Visibility = EVERYTHING) -> RunAnswer:
    """`GET /jobs/runs/{id}`. A run of a job `visibility` does not show is NotFound in the
    words of a missing run; a shown run's parent in a hidden namespace is no parent."""
    doc = run_docs(conn, [run_id], visibility).get(run_id)
    if doc is None or not visibility.shows(doc["jobVersion"]["namespace"]):
        raise NotFound(f"run {run_id} not found")
    return cast(RunAnswer, doc)


def run_facets(
    conn: Connection, run_id: uuid.UUID, kind: str, visibility: Visibility = EVERYTHING
) -> RunFacetsAnswer:
    """`GET /jobs/runs/{id}/facets?type=run|job`: the run's facets, or its job's; NotFound,
    as for a missing run, for a run of a job `visibility` does not show."""
    row = conn.execute(
        sa.select(t.runs.c.facets, t.jobs.c.facets.label("job_facets"), t.jobs.c.namespace)
        .join(t.jobs, t.jobs.c.id == t.runs.c.job_id)
        .where(t.runs.c.id == run_id)
    ).first()
    if row is None or not visibility.shows(row.namespace):
        raise NotFound(f"run {run_id} not found")
    if kind == "job":
        return {"runId": str(run_id), "facets": row.job_facets or {}}
    return {"runId": str(run_id), "facets": unpack(conn, [row.facets])[0]}


def runs_newest_first(job_id: uuid.UUID) -> sa.Select[Any]:
    """The runs of a job, newest first (by start, then by first sight), ties by id."""
    moment = sa.func.coalesce(t.runs.c.started_at, t.runs.c.created_at)
    return (
        sa.select(t.runs.c.id)
        .where(t.runs.c.job_id == job_id)
        .order_by(moment.desc(), t.runs.c.id.desc())
    )


def list_job_runs(
    conn: Connection,
    namespace: str,
    job: str,
    page: Page,
    visibility: Visibility = EVERYTHING,
) -> RunsAnswer:
    """`GET /namespaces/{ns}/jobs/{job}/runs`, newest first."""
    job_id = require_job(conn, namespace, job)
    query = runs_newest_first(job_id)
    ids = list(conn.execute(page.apply(query)).scalars())
    docs = run_docs(conn, ids, visibility)
    return {"runs": [cast(RunAnswer, docs[i]) for i in ids], "totalCount": total(conn, query)}
