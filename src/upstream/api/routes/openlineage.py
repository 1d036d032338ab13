"""`POST /api/v1/lineage`: OpenLineage events in, one at a time or as a JSON array (§3.1)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from upstream.api.body import read_events
from upstream.api.deps import POSITION_DOC, GroupCommitDep, SettingsDep, answer_position
from upstream.api.event_schema import event_request_body
from upstream.api.metrics import metrics_of
from upstream.ingest.body import Limits
from upstream.ingest.service import prepare

router = APIRouter(tags=["openlineage"])


@router.post(
    "/api/v1/lineage",
    status_code=201,
    response_class=Response,
    summary="Post OpenLineage events",
    responses={
        201: {
            "description": "Stored (or already stored); empty body, as Marquez. The "
            "X-Upstream-Position header is the position to read after to see these events.",
            "headers": {"X-Upstream-Position": POSITION_DOC},
        },
        401: {"description": "Tokens are configured and none (or an unknown one) was sent"},
        403: {"description": "The token's role is read; posting needs write"},
        408: {"description": "The body arrived too slowly"},
    },
    openapi_extra={
        "requestBody": event_request_body(
            "An OpenLineage RunEvent, JobEvent or DatasetEvent, or an array of them; "
            "optionally gzip-compressed (Content-Encoding: gzip)."
        )
    },
)
async def post_lineage(request: Request, writer: GroupCommitDep, settings: SettingsDep) -> Response:
    """Store a RunEvent, JobEvent or DatasetEvent, or a JSON array of them all-or-nothing."""
    arrived = time.monotonic()  # its time to wait for the database counts from here
    limits = Limits(settings.max_body_bytes, settings.max_batch_events, settings.max_event_values)
    events = await read_events(request, limits)
    facts = await run_in_threadpool(
        prepare,
        events.documents,
        batch=events.batch,
        sql_lineage=settings.sql_lineage,
        texts=events.texts,
    )
    result = await writer.write(facts, since=arrived)
    metrics_of(request).count_ingested(result)
    metrics_of(request).count_sql(facts)
    response = Response(status_code=201)
    answer_position(response, result.position)
    return response
