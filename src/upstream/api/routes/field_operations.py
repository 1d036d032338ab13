"""`POST /v3/namespaces/{ns}/lineage/field-operations`: CDAP's field-operations document as
JSON, for programs that do not use the Python recorder (design §3.5)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from upstream.api.body import read_json
from upstream.api.deps import (
    POSITION_DOC,
    AccessDep,
    GroupCommitDep,
    SettingsDep,
    answer_position,
)
from upstream.api.metrics import metrics_of
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.ingest.body import Limits
from upstream.ingest.service import prepare
from upstream.model.write_scope import writable_events

router = APIRouter(tags=["field lineage"], route_class=EncodedSegmentsRoute)

_SUFFIX = "/lineage/field-operations"


@router.post(
    "/v3/namespaces/{namespace:path}" + _SUFFIX,
    status_code=201,
    response_class=Response,
    summary="Record field operations (for programs that do not use the Python recorder)",
    responses={
        201: {
            "description": "Stored (or already stored); empty body. The X-Upstream-Position "
            "header is the position to read after to see them.",
            "headers": {"X-Upstream-Position": POSITION_DOC},
        },
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The field-operations document: the program's operations, the "
            "dataset it writes, its job and run; optionally gzip-compressed.",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
)
async def post_field_operations(
    request: Request,
    namespace: str,
    writer: GroupCommitDep,
    settings: SettingsDep,
    access: AccessDep,
) -> Response:
    """Validate the document, convert it to the recorder's RunEvent and ingest it."""
    # Imported at the first document: it takes the OpenLineage client (a third of a second
    # of CPU), which every server start and test process would pay for otherwise.
    from upstream.ingest.operations_document import operations_document_event

    limits = Limits(settings.max_body_bytes, max_events=None, max_values=settings.max_event_values)
    body = await read_json(request, limits)
    event = operations_document_event(namespace, body.document)
    documents, _ = writable_events([event], access)
    facts = await run_in_threadpool(prepare, documents, batch=False)
    result = await writer.write(facts)
    metrics_of(request).count_ingested(result)
    response = Response(status_code=201)
    answer_position(response, result.read_position())
    return response
