"""`POST /api/v1/lineage`: OpenLineage events in, one at a time or as a JSON array (§3.1)."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from upstream.api.body import read_body
from upstream.api.deps import GroupCommitDep, SettingsDep
from upstream.api.errors import ApiError, status_of
from upstream.api.event_schema import event_request_body
from upstream.api.json_shape import ShapeLimits
from upstream.api.metrics import metrics_of
from upstream.ingest.outcomes import EventOutcome, store_each
from upstream.ingest.service import prepare
from upstream.model.errors import InvalidInput

router = APIRouter(tags=["openlineage"])


@router.post(
    "/api/v1/lineage",
    status_code=201,
    response_class=Response,
    summary="Post OpenLineage events",
    responses={
        201: {"description": "Stored (or already stored); empty body, as Marquez."},
        207: {
            "description": "With atomic=false: the good events are stored; one outcome per "
            "event (index, status, and for a refused event its located errors)"
        },
        400: {"description": "Malformed body"},
        401: {"description": "Tokens are configured and none (or an unknown one) was sent"},
        403: {"description": "The token's role is read; posting needs write"},
        408: {"description": "The body arrived too slowly"},
        413: {"description": "Body, batch or event too large"},
        415: {"description": "Not JSON, or an encoding other than gzip"},
        422: {"description": "An event is invalid; nothing was stored"},
    },
    openapi_extra={
        "requestBody": event_request_body(
            "An OpenLineage RunEvent, JobEvent or DatasetEvent, or an array of them; "
            "optionally gzip-compressed (Content-Encoding: gzip)."
        )
    },
)
async def post_lineage(
    request: Request,
    writer: GroupCommitDep,
    settings: SettingsDep,
    atomic: Annotated[
        bool,
        Query(
            description="true (default): a batch is stored whole or not at all; false: the "
            "good events are stored and the answer is 207 with one outcome per event"
        ),
    ] = True,
) -> Response:
    """Store a RunEvent, JobEvent or DatasetEvent, or a JSON array of them: all-or-nothing,
    or, with atomic=false, each event on its own."""
    arrived = time.monotonic()  # its time to wait for the database counts from here
    shape = ShapeLimits(max_items=settings.max_batch_events, max_values=settings.max_event_values)
    body = await read_body(request, settings.max_body_bytes, shape)
    batch = isinstance(body.document, list)
    documents = body.document if batch else [body.document]
    if batch and not documents:
        raise ApiError(400, "body: an empty array holds no events")
    if not atomic:
        outcomes = await store_each(
            documents, writer.write, batch=batch, sql_lineage=settings.sql_lineage, texts=body.texts
        )
        for outcome in outcomes:
            if outcome.result is not None and outcome.facts is not None:
                metrics_of(request).count_ingested(outcome.result)
                metrics_of(request).count_sql([outcome.facts])
        return JSONResponse(_outcomes_json(outcomes), status_code=207)
    facts = await run_in_threadpool(
        prepare, documents, batch=batch, sql_lineage=settings.sql_lineage, texts=body.texts
    )
    result = await writer.write(facts, since=arrived)
    metrics_of(request).count_ingested(result)
    metrics_of(request).count_sql(facts)
    return Response(status_code=201)


def _outcomes_json(outcomes: list[EventOutcome]) -> dict[str, object]:
    """The 207 body: counts, then one entry per event in posting order."""
    entries: list[dict[str, object]] = []
    for outcome in outcomes:
        if outcome.result is not None:
            duplicate = outcome.result.duplicates > 0
            entries.append({"index": outcome.index, "status": 201, "duplicate": duplicate})
        elif outcome.error is not None:
            entry: dict[str, object] = {
                "index": outcome.index,
                "status": status_of(outcome.error),
                "message": outcome.error.message,
            }
            if isinstance(outcome.error, InvalidInput):
                entry["errors"] = [
                    {"path": p.path, "message": p.message} for p in outcome.error.problems
                ]
            entries.append(entry)
    stored = [e for e in entries if e["status"] == 201]
    return {
        "stored": sum(1 for e in stored if not e["duplicate"]),
        "duplicates": sum(1 for e in stored if e["duplicate"]),
        "refused": len(entries) - len(stored),
        "outcomes": entries,
    }
