"""`POST /api/v1/lineage`: OpenLineage events in, one at a time or as a JSON array (§3.1)."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from upstream.api.body import read_events
from upstream.api.deps import (
    POSITION_DOC,
    Documented,
    answer_position,
    get_access,
    get_event_writer,
    get_settings,
    get_store,
)
from upstream.api.errors import status_of
from upstream.api.event_schema import event_request_body
from upstream.api.metrics import metrics_of
from upstream.collector import batch_in_flight
from upstream.ingest.body import Limits
from upstream.ingest.outcomes import EventOutcome, store_each
from upstream.ingest.service import prepare
from upstream.model.errors import InvalidInput
from upstream.model.read_position import ReadPosition
from upstream.model.write_scope import writable_events

router = APIRouter(tags=["openlineage"])

_BOOLEAN = TypeAdapter(bool)


def _atomic_declared(
    atomic: Annotated[
        bool,
        Query(
            description="true (default): a batch is stored whole or not at all; false: the "
            "good events are stored and the answer is 207 with one outcome per event"
        ),
    ] = True,
) -> None:
    """What the route says of `?atomic=` (never called)."""


async def read_atomic(request: Request) -> bool:
    """`?atomic=` as FastAPI reads a declared boolean, without its per-request machinery:
    the last one given, pydantic's booleans (`true`, `0`, `off`, …), true when absent, and
    anything else refused naming `atomic` (400)."""
    given = request.query_params.get("atomic")
    if given is None:
        return True
    try:
        return _BOOLEAN.validate_python(given)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("query", "atomic")} for error in exc.errors()]
        ) from None


AtomicDep = Annotated[bool, Depends(Documented(read_atomic, _atomic_declared))]


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
        207: {
            "description": "With atomic=false: the good events are stored; one outcome per "
            "event (index, status, and for a refused event its located errors). The "
            "X-Upstream-Position header, and the body's position, is the position to read "
            "after to see them.",
            "headers": {"X-Upstream-Position": POSITION_DOC},
        },
        401: {"description": "Tokens are configured and none (or an unknown one) was sent"},
        403: {
            "description": "The token's role is read, or its scopes do not allow writing the "
            "namespace of an event's job (the message names it); nothing was stored"
        },
        408: {"description": "The body arrived too slowly"},
    },
    openapi_extra={
        "requestBody": event_request_body(
            "An OpenLineage RunEvent, JobEvent or DatasetEvent, or an array of them; "
            "optionally gzip-compressed (Content-Encoding: gzip)."
        )
    },
)
async def post_lineage(request: Request, atomic: AtomicDep) -> Response:
    """Store a RunEvent, JobEvent or DatasetEvent, or a JSON array of them: all-or-nothing,
    or, with atomic=false, each event on its own."""
    arrived = time.monotonic()  # its time to wait for the database counts from here
    # Read from the app, not resolved as dependencies: FastAPI resolving each cost every
    # post more than the read itself.
    writer, settings = await get_event_writer(request), await get_settings(request)
    access = await get_access(request)
    # From here the watcher's rounds wait for it: decoding and preparing the events take
    # more of the process's CPU than storing them.
    with (await get_store(request)).taking_write(), batch_in_flight():
        limits = Limits(
            settings.max_body_bytes, settings.max_batch_events, settings.max_event_values
        )
        events = await read_events(request, limits)
        documents, changed = writable_events(events.documents, access)
        texts = None if changed else events.texts
        if not atomic:
            outcomes = await store_each(
                documents,
                writer.write,
                batch=events.batch,
                sql_lineage=settings.sql_lineage,
                texts=texts,
            )
            position = ReadPosition()
            for outcome in outcomes:
                if outcome.result is not None and outcome.facts is not None:
                    metrics_of(request).count_ingested(outcome.result)
                    metrics_of(request).count_sql([outcome.facts])
                    position = position.together(outcome.result.read_position())
            if position == ReadPosition():  # nothing stored: no read need wait
                position = ReadPosition(change=0)
            answer = JSONResponse(_outcomes_json(outcomes, position), status_code=207)
            answer_position(answer, position)
            return answer
        facts = await run_in_threadpool(
            prepare,
            documents,
            batch=events.batch,
            sql_lineage=settings.sql_lineage,
            texts=texts,
        )
        result = await writer.write(facts, since=arrived)
        metrics_of(request).count_ingested(result)
        metrics_of(request).count_sql(facts)
        response = Response(status_code=201)
        answer_position(response, result.read_position())
        return response


def _outcomes_json(outcomes: list[EventOutcome], position: ReadPosition) -> dict[str, object]:
    """The 207 body: counts, the position to read after, then one entry per event in
    posting order."""
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
        "position": str(position),
        "outcomes": entries,
    }
