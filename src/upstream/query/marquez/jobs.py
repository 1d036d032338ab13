"""Jobs and job versions in Marquez's shapes.

A job's `inputs` and `outputs` are cumulative: every dataset any run of it (or its declaration)
read or wrote, not only the latest version's, so a job whose runs wrote different outputs shows
all of them. `parentJobName` is the job of the latest run's parent run (its workflow).

Lists filter by the state of each job's latest run (`lastRunStates`, as Marquez's web UI asks
for the jobs that failed last); a job without runs is always listed, as in Marquez, and
`totalCount` counts the jobs the filter keeps, so that pages add up.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from typing import Any, Literal, cast, get_args

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter, NotFound
from upstream.model.identity import namespace_id
from upstream.model.ownership import own_and_facet_tags, owners_of
from upstream.query.graph_index.index import dataset_names_by_id
from upstream.query.marquez.answers import (
    JobAnswer,
    JobsAnswer,
    JobVersionAnswer,
    JobVersionsAnswer,
)
from upstream.query.marquez.common import (
    Json,
    Page,
    entity_columns,
    facets_in,
    iso,
    require_job,
    require_namespace,
    total,
)
from upstream.query.marquez.runs import RUN_STATES, run_docs, run_io, runs_newest_first
from upstream.query.marquez.tags import job_tags_of
from upstream.store import schema as t
from upstream.store.deletion import deleted, visible
from upstream.store.dialect import id_filters
from upstream.store.visibility import shown_namespaces

#: How many recent runs a job document lists in `latestRuns`, as Marquez does.
LATEST_RUNS = 10

#: The states a run can be in, as Marquez names them (`NEW`: known only as a parent).
RunState = Literal["NEW", "RUNNING", "COMPLETED", "FAILED", "ABORTED", "OTHER"]
RUN_STATE_NAMES: tuple[RunState, ...] = get_args(RunState)


def run_states(values: Collection[str]) -> tuple[RunState, ...]:
    """`lastRunStates` as given; a value that is no run state is refused naming the parameter."""
    for value in values:
        if value not in RUN_STATE_NAMES:
            raise InvalidParameter.at(
                "lastRunStates", f"{value!r} is none of {', '.join(RUN_STATE_NAMES)}"
            )
    return tuple(cast(RunState, value) for value in values)


def job_docs(
    conn: Connection,
    job_ids: Collection[uuid.UUID],
    *,
    recent_runs: int = LATEST_RUNS,
    visibility: Visibility = EVERYTHING,
    facets: bool = True,
) -> dict[uuid.UUID, Json]:
    """Marquez `Job` documents for `job_ids`, built with a fixed number of queries, with up to
    `recent_runs` runs in `latestRuns`, without the job's `facets` when not asked for (a
    lineage graph's nodes have none); a parent job `visibility` does not show is named as
    no parent is (`parentJobName` null), so a reader does not learn its name."""
    rows: list[Any] = []
    columns = entity_columns(t.jobs, facets=facets)
    for matches in id_filters(conn, t.jobs.c.id, job_ids):
        query = sa.select(*columns, deleted(t.jobs)).where(matches)
        rows.extend(conn.execute(query).mappings().all())
    ids = [row["id"] for row in rows]
    io = _job_io(conn, ids)
    latest = _latest_runs(conn, ids, recent_runs)
    runs = run_docs(conn, [r for runs in latest.values() for r in runs], visibility)
    parents = _parent_jobs(conn, [runs_[0] for runs_ in latest.values() if runs_], visibility)
    tags = job_tags_of(conn, ids)
    docs: dict[uuid.UUID, Json] = {}
    for row in rows:
        recent = [runs[r] for r in latest.get(row["id"], []) if r in runs]
        parent = parents.get(latest[row["id"]][0]) if latest.get(row["id"]) else None
        inputs, outputs = io.get(row["id"], ([], []))
        stated = facets_in(row, facets=facets)
        docs[row["id"]] = {
            "id": {"namespace": row["namespace"], "name": row["name"]},
            "type": "STREAM" if (row["processing_type"] or "").upper() == "STREAMING" else "BATCH",
            "name": row["name"],
            "simpleName": row["name"],
            "parentJobName": parent[1] if parent else None,
            "parentJobUuid": str(parent[0]) if parent else None,
            "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"]),
            "namespace": row["namespace"],
            "inputs": inputs,
            "outputs": outputs,
            "location": _location(stated),
            "context": {},
            "description": row["description"],
            "latestRun": recent[0] if recent else None,
            "latestRuns": recent,
            **({"facets": stated} if facets else {}),
            "currentVersion": recent[0]["jobVersion"]["version"] if recent else None,
            "labels": [],
            "tags": own_and_facet_tags(tags.get(row["id"], []), stated),
            "owners": owners_of(stated),
            "deleted": row["deleted"],
        }
    return docs


def _location(facets: Json | None) -> str | None:
    source = (facets or {}).get("sourceCodeLocation")
    if isinstance(source, dict) and isinstance(source.get("url"), str):
        return str(source["url"])
    return None


def _job_io(
    conn: Connection, job_ids: list[uuid.UUID]
) -> dict[uuid.UUID, tuple[list[Json], list[Json]]]:
    """Every dataset each job read or wrote, over all its runs and its declaration, named
    as the process keeps the names (`graph_index.names`): no join with every dataset."""
    r = t.relations.c
    rows: list[Any] = []
    for matches in id_filters(conn, r.job_id, job_ids):
        query = sa.select(r.job_id, r.access, r.dataset_id).where(matches).distinct()
        rows.extend(conn.execute(query).all())
    names = dataset_names_by_id(conn, {dataset for _, _, dataset in rows})
    found: dict[uuid.UUID, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = defaultdict(
        lambda: (set(), set())
    )
    for job, access, dataset in rows:
        found[job][0 if access == "read" else 1].add(names[dataset])
    return {
        job: (
            [{"namespace": n, "name": m} for n, m in sorted(reads)],
            [{"namespace": n, "name": m} for n, m in sorted(writes)],
        )
        for job, (reads, writes) in found.items()
    }


def _latest_runs(
    conn: Connection, job_ids: list[uuid.UUID], count: int
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """The newest `count` runs of each job, newest first."""
    result: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for matches in id_filters(conn, t.runs.c.job_id, job_ids):
        ranked = ranked_runs().where(matches).subquery()
        query = (
            sa.select(ranked.c.id, ranked.c.job_id)
            .where(ranked.c.position <= count)
            .order_by(ranked.c.job_id, ranked.c.position)
        )
        for row in conn.execute(query).all():
            result[row.job_id].append(row.id)
    return result


def ranked_runs() -> sa.Select[Any]:
    """Runs with their `position` among their job's runs, newest (started, else received)
    first: position 1 is the job's latest run."""
    r = t.runs
    moment = sa.func.coalesce(r.c.started_at, r.c.created_at)
    position = sa.func.row_number().over(
        partition_by=r.c.job_id, order_by=(moment.desc(), r.c.id.desc())
    )
    return sa.select(r.c.id, r.c.job_id, r.c.state, position.label("position"))


def _latest_run_in(states: Collection[RunState]) -> sa.ColumnElement[bool]:
    """Jobs whose latest run is in one of `states`, and jobs without runs."""
    ranked = ranked_runs().subquery()
    stored = [kind for kind, state in RUN_STATES.items() if state in states]
    in_states = [ranked.c.state.in_(stored)] if stored else []
    if "NEW" in states:
        in_states.append(ranked.c.state.is_(None))
    latest = sa.select(ranked.c.job_id).where(ranked.c.position == 1)
    kept = latest.where(sa.or_(*in_states)) if in_states else latest.where(sa.false())
    return sa.or_(t.jobs.c.id.not_in(latest), t.jobs.c.id.in_(kept))


def _parent_jobs(
    conn: Connection, run_ids: list[uuid.UUID], visibility: Visibility
) -> dict[uuid.UUID, tuple[uuid.UUID, str]]:
    """For each run with a parent run whose job `visibility` shows: that job (id, name)."""
    child, parent = t.runs.alias("child"), t.runs.alias("parent")
    result: dict[uuid.UUID, tuple[uuid.UUID, str]] = {}
    for matches in id_filters(conn, child.c.id, run_ids):
        query = (
            sa.select(child.c.id, t.jobs.c.id.label("job_id"), t.jobs.c.name)
            .join(parent, parent.c.id == child.c.parent_run_id)
            .join(t.jobs, t.jobs.c.id == parent.c.job_id)
            .where(matches, shown_namespaces(t.jobs.c.namespace, visibility))
        )
        result.update({row.id: (row.job_id, row.name) for row in conn.execute(query).all()})
    return result


def list_jobs(
    conn: Connection,
    namespace: str | None,
    page: Page,
    *,
    last_run_states: Collection[RunState] = (),
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> JobsAnswer:
    """`GET /namespaces/{ns}/jobs`, by name, or `GET /jobs` (every namespace), the most
    recently updated first as Marquez lists them; deleted ones only when asked for; only
    those the reader may see."""
    query = sa.select(t.jobs.c.id).where(
        visible(t.jobs, include_deleted), shown_namespaces(t.jobs.c.namespace, visibility)
    )
    order: tuple[Any, ...]
    if namespace is None:
        order = (t.jobs.c.updated_at.desc(), t.jobs.c.namespace, t.jobs.c.name)
    else:
        require_namespace(conn, namespace, include_deleted=include_deleted)
        query = query.where(t.jobs.c.namespace_id == namespace_id(namespace))
        order = (t.jobs.c.name, t.jobs.c.id)
    if last_run_states:
        query = query.where(_latest_run_in(last_run_states))
    ids = list(conn.execute(page.apply(query.order_by(*order))).scalars())
    docs = job_docs(conn, ids, visibility=visibility)
    return {"jobs": [cast(JobAnswer, docs[i]) for i in ids], "totalCount": total(conn, query)}


def get_job(
    conn: Connection,
    namespace: str,
    name: str,
    *,
    include_deleted: bool = False,
    visibility: Visibility = EVERYTHING,
) -> JobAnswer:
    """`GET /namespaces/{ns}/jobs/{job}`."""
    job_id = require_job(conn, namespace, name, include_deleted=include_deleted)
    return cast(JobAnswer, job_docs(conn, [job_id], visibility=visibility)[job_id])


def _versions(conn: Connection, namespace: str, name: str) -> list[Json]:
    """The job's versions, newest first: runs grouped by the datasets they touched."""
    job_id = require_job(conn, namespace, name)
    job = job_docs(conn, [job_id])[job_id]
    run_ids = list(conn.execute(runs_newest_first(job_id)).scalars())
    io = run_io(conn, run_ids)
    groups: dict[uuid.UUID, list[uuid.UUID]] = {}
    for run_id in run_ids:
        if run_id in io:
            groups.setdefault(io[run_id].job_version(job_id), []).append(run_id)
    latest = run_docs(conn, [runs[0] for runs in groups.values()])
    versions = []
    for version, runs in groups.items():
        first, newest = io[runs[-1]], latest[runs[0]]  # runs are newest first
        versions.append(
            {
                "id": {"namespace": namespace, "name": name, "version": str(version)},
                "name": name,
                "version": str(version),
                "createdAt": _created(conn, runs[-1]),
                "namespace": namespace,
                "inputs": [{"namespace": n, "name": m} for n, m, *_ in first.inputs],
                "outputs": [{"namespace": n, "name": m} for n, m, *_ in first.outputs],
                "location": job["location"],
                "context": {},
                "latestRun": newest,
                "facets": job["facets"],
            }
        )
    return versions


def _created(conn: Connection, run_id: uuid.UUID) -> str | None:
    return iso(conn.execute(sa.select(t.runs.c.created_at).where(t.runs.c.id == run_id)).scalar())


def list_job_versions(conn: Connection, namespace: str, name: str, page: Page) -> JobVersionsAnswer:
    """`GET /namespaces/{ns}/jobs/{job}/versions`, newest first."""
    versions = _versions(conn, namespace, name)
    return {
        "versions": [
            cast(JobVersionAnswer, v) for v in versions[page.offset : page.offset + page.limit]
        ],
        "totalCount": len(versions),
    }


def get_job_version(
    conn: Connection, namespace: str, name: str, version: uuid.UUID
) -> JobVersionAnswer:
    for doc in _versions(conn, namespace, name):
        if doc["version"] == str(version):
            return cast(JobVersionAnswer, doc)
    raise NotFound(f"version {version} of job {name!r} not found in namespace {namespace!r}")
