"""`GET /v3/namespaces/{ns}/datasets/{ds}/lineage`: CDAP's dataset lineage (DESIGN §4.2)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import ApiError
from upstream.api.params import LEVELS, Collapse, End, Start, parsed
from upstream.api.routes.marquez_common import EncodedSegmentsRoute
from upstream.query.dataset_lineage import (
    Direction,
    LineageParams,
    Rollup,
    UnknownEntity,
    dataset_lineage,
)

#: Names hold `/` (`s3://bucket`): clients percent-encode them, and the route matches the raw
#: path so each segment is decoded exactly once (DESIGN §4.4).
router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)

_PATH = "/v3/namespaces/{namespace}/datasets/{dataset}/lineage"


@router.get(
    _PATH,
    summary="Lineage of a dataset (CDAP style)",
    responses={
        400: {"description": "A bad parameter; the message names it"},
        404: {"description": "Unknown namespace or dataset"},
    },
)
async def get_dataset_lineage(
    namespace: str,
    dataset: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    levels: Annotated[
        str | None,
        Query(description="Levels to walk; default 10, at most the max_levels setting"),
        LEVELS,
    ] = None,
    collapse: Collapse = None,
    rollup: Annotated[
        Rollup | None, Query(description="workflow: jobs inside workflows become the workflow")
    ] = None,
    direction: Annotated[
        Direction | None, Query(description="both (default), upstream or downstream")
    ] = None,
) -> dict[str, Any]:
    """Relations (dataset, program, accesses, runs, components) around one dataset."""
    params = parsed(
        lambda: LineageParams.parse(
            max_levels=settings.max_levels,
            start=start,
            end=end,
            levels=levels,
            collapse=collapse or (),
            rollup=rollup,
            direction=direction,
        )
    )
    try:
        return await run_in_threadpool(
            dataset_lineage,
            store,
            namespace,
            dataset,
            params,
            max_nodes=settings.max_lineage_nodes,
            max_relations=settings.max_lineage_relations,
        )
    except UnknownEntity as exc:
        raise ApiError(404, str(exc)) from None
