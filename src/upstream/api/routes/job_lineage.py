"""`GET /v3/namespaces/{ns}/jobs/{job}/lineage`, the lineage around a job with the parameters
of dataset lineage (`upstream.query.job_lineage`), and `…/contents`, the runs and jobs inside
a workflow (`upstream.query.workflow_contents`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import ApiError
from upstream.api.lineage_query import LineageParamsDep
from upstream.api.params import End, Start, parsed
from upstream.api.routes.marquez_common import EncodedSegmentsRoute
from upstream.query.dataset_lineage import LineageParams, UnknownEntity
from upstream.query.job_lineage import job_lineage
from upstream.query.workflow_contents import workflow_contents

router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)

_JOB = "/v3/namespaces/{namespace}/jobs/{job}"
_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "A bad parameter; the message names it"},
    404: {"description": "Unknown namespace or job"},
}


@router.get(_JOB + "/lineage", summary="Lineage around a job", responses=_RESPONSES)
async def get_job_lineage(
    namespace: str, job: str, store: StoreDep, settings: SettingsDep, params: LineageParamsDep
) -> dict[str, Any]:
    """Relations around one job: `levels` levels of dataset lineage from the datasets it read
    (upstream), wrote (downstream) or both in the window, and its own reads or writes."""
    try:
        return await run_in_threadpool(
            job_lineage,
            store,
            namespace,
            job,
            params,
            max_nodes=settings.max_lineage_nodes,
            max_relations=settings.max_lineage_relations,
        )
    except UnknownEntity as exc:
        raise ApiError(404, str(exc)) from None


@router.get(_JOB + "/contents", summary="Runs and jobs inside a workflow", responses=_RESPONSES)
async def get_workflow_contents(
    namespace: str,
    job: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
) -> dict[str, Any]:
    """The workflow's runs that overlap the window, newest first, each with the job runs
    inside it, and the jobs of those runs with their run counts and newest run."""
    window = parsed(
        lambda: LineageParams.parse(max_levels=settings.max_levels, start=start, end=end)
    ).window
    try:
        return await run_in_threadpool(workflow_contents, store, namespace, job, window)
    except UnknownEntity as exc:
        raise ApiError(404, str(exc)) from None
