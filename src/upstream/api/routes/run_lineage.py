"""`GET /v3/runs/{runId}/lineage`: which runs made the data a run read, and which runs read
what it wrote (design §4.5)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from upstream.api.deps import ReaderDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.lineage_query import asked
from upstream.api.services import read
from upstream.model.errors import NotFound
from upstream.query.answers import RunLineageAnswer
from upstream.query.lineage_query import RunQuery
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
    reader: ReaderDep,
    query: Annotated[RunQuery, Depends(asked(RunQuery))],
) -> JsonAnswer[RunLineageAnswer]:
    """Runs (job, state, start, end) and the dataset versions between them: for each read,
    the run that wrote the version read (the version the producer named, else the latest
    run that completed writing it before the read started)."""
    params = RunLineageParams.parse(str(run_id), query, max_levels=reader.settings.max_levels)
    return read(
        reader.store,
        run_lineage,
        params,
        max_nodes=reader.settings.max_lineage_nodes,
        visibility=reader.visibility,
    )
