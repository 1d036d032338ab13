"""`GET /v3/runs/{runId}/lineage`: which runs made the data a run read, and which runs read
what it wrote (design §4.5)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import LEVELS, AsOf
from upstream.api.services import read
from upstream.model.direction import Direction
from upstream.model.errors import NotFound
from upstream.query.answers import RunLineageAnswer
from upstream.query.run_lineage import RunLineageParams, run_lineage

router = APIRouter(tags=["run lineage"])


@router.get(
    "/v3/runs/{runId}/lineage",
    summary="Lineage of a run: the runs and dataset versions it read from and fed",
    response_model=None,
    responses={
        200: {"model": RunLineageAnswer},
        **documented(NotFound),
    },
)
def get_run_lineage(
    run_id: Annotated[uuid.UUID, Path(alias="runId", description="The run's id (a UUID)")],
    store: StoreDep,
    settings: SettingsDep,
    direction: Annotated[
        Direction | None, Query(description="both (default), upstream or downstream")
    ] = None,
    levels: Annotated[
        str | None,
        Query(description="Runs to step through; default 5, at most the max_levels setting"),
        LEVELS,
    ] = None,
    as_of: AsOf = None,
) -> JsonAnswer[RunLineageAnswer]:
    """Runs (job, state, start, end) and the dataset versions between them: for each read,
    the run that wrote the version read (the version the producer named, else the latest
    run that completed writing it before the read started)."""
    params = RunLineageParams.parse(
        str(run_id),
        max_levels=settings.max_levels,
        direction=direction,
        levels=levels,
        as_of=as_of,
    )
    return read(store, run_lineage, params, max_nodes=settings.max_lineage_nodes)
