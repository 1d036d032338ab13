"""`GET /v3/namespaces/{ns}/jobs/{job}/lineage`: the lineage around a job, with the
parameters of dataset lineage (`upstream.query.job_lineage`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import ApiError
from upstream.api.lineage_query import LineageParamsDep
from upstream.api.routes.marquez_common import EncodedSegmentsRoute
from upstream.query.dataset_lineage import UnknownEntity
from upstream.query.job_lineage import job_lineage

router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)


@router.get(
    "/v3/namespaces/{namespace}/jobs/{job}/lineage",
    summary="Lineage around a job",
    responses={
        400: {"description": "A bad parameter; the message names it"},
        404: {"description": "Unknown namespace or job"},
    },
)
async def get_job_lineage(
    namespace: str,
    job: str,
    store: StoreDep,
    settings: SettingsDep,
    params: LineageParamsDep,
) -> dict[str, Any]:
    """Relations around one job: `levels` levels of dataset lineage from the datasets it read
    (upstream), wrote (downstream) or both in the window, and its own reads or writes."""
    try:
        return await run_in_threadpool(
            job_lineage, store, namespace, job, params, max_nodes=settings.max_lineage_nodes
        )
    except UnknownEntity as exc:
        raise ApiError(404, str(exc)) from None
