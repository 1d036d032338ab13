"""What a workflow contains (design §3.4): its runs in a window and, for each, the job runs
inside it; and the jobs those runs belong to. Behind
`GET /v3/namespaces/{ns}/jobs/{job}/contents` and the web UI's workflow page.

Membership is the rule rollup=workflow uses (`query.workflows`): a run belongs to
the nearest workflow run up its parent chain, so a task of a nested sub-workflow belongs to
the sub-workflow, not to the outer one.

A reader limited to some namespaces sees a workflow it may see with the runs of its jobs
only: a run inside it of a job the reader may not see is left out and counted
(`hiddenRelations`: such runs, `hiddenNodes`: their jobs), never named (design §5).
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.window import Window
from upstream.model.workflow import is_workflow
from upstream.query.answers import WorkflowContentsAnswer
from upstream.query.graph_index.index import graph_of
from upstream.query.lookup import existing_job
from upstream.query.marquez.runs import run_docs
from upstream.query.workflows import members as workflow_members
from upstream.query.workflows import workflow_runs
from upstream.store import schema as t

#: What the contents show of each run, from its Marquez `Run` document.
_RUN_KEYS = ("id", "state", "startedAt", "endedAt", "durationMs")


def workflow_contents(
    conn: Connection,
    namespace: str,
    name: str,
    window: Window,
    visibility: Visibility = EVERYTHING,
) -> WorkflowContentsAnswer:
    """The runs of workflow `namespace`/`name` overlapping `window`, newest first, each with
    the job runs inside it; and every job with a run inside them, with its run count and
    newest run. A job that is no workflow has none. Raises NotFound for an unknown
    namespace or job, or one `visibility` does not show."""
    job_id = existing_job(conn, namespace, name, visibility)
    row = conn.execute(
        sa.select(t.jobs.c.job_type, t.jobs.c.seen_as_parent).where(t.jobs.c.id == job_id)
    ).one()
    graph = graph_of(conn)
    members = workflow_members(graph, {job_id}, window)
    links = workflow_runs(graph, members)
    docs = run_docs(conn, members, visibility)
    inside: dict[uuid.UUID, list[dict[str, Any]]] = {}
    outer: list[dict[str, Any]] = []
    hidden_runs: list[dict[str, Any]] = []
    for run_id, doc in docs.items():
        link = links.get(run_id)
        if link is None or link == run_id:
            outer.append(doc)
        elif not visibility.shows(doc["jobVersion"]["namespace"]):
            hidden_runs.append(doc)
        else:
            inside.setdefault(link, []).append(doc)
    runs = [
        {**_summary(doc), "jobRuns": [_job_run(d) for d in _newest_first(inside.get(_id(doc), []))]}
        for doc in _newest_first(outer)
    ]
    answer = {
        "namespace": namespace,
        "name": name,
        "isWorkflow": is_workflow(row.job_type, row.seen_as_parent),
        "runs": runs,
        "jobs": _jobs(run for docs_ in inside.values() for run in docs_),
    }
    if not visibility.everything:
        answer["hiddenNodes"] = len(_jobs(hidden_runs))
        answer["hiddenRelations"] = len(hidden_runs)
    return cast(WorkflowContentsAnswer, answer)


def _id(doc: dict[str, Any]) -> uuid.UUID:
    return uuid.UUID(doc["id"])


def _newest_first(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Newest start first, runs not started last, ties by id: the same order every time."""
    return sorted(docs, key=lambda d: (d["startedAt"] or "", d["id"]), reverse=True)


def _summary(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: doc[key] for key in _RUN_KEYS}


def _job_run(doc: dict[str, Any]) -> dict[str, Any]:
    job = doc["jobVersion"]
    return {**_summary(doc), "job": {"namespace": job["namespace"], "name": job["name"]}}


def _jobs(docs: Any) -> list[dict[str, Any]]:
    """One entry per job, by namespace and name, with how many of the runs are its."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for doc in docs:
        job = doc["jobVersion"]
        found.setdefault((job["namespace"], job["name"]), []).append(doc)
    return [
        {
            "namespace": namespace,
            "name": name,
            "runs": len(runs),
            "latestRun": _summary(_newest_first(runs)[0]),
        }
        for (namespace, name), runs in sorted(found.items())
    ]
