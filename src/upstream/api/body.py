"""A JSON request body, as HTTP delivers it: its headers (content type and encoding) and its
stream within the size limit; the bytes are then decoded by `ingest.body`, whose refusals
`api.errors.STATUS` answers (400, 413).

Large or compressed bodies are inflated and parsed on a worker thread, so the event loop goes
on answering everyone else meanwhile."""

from __future__ import annotations

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from upstream.api.errors import ApiError
from upstream.ingest.body import (
    REQUEST_BODY,
    Body,
    Events,
    Limits,
    decode,
    decode_events,
    too_large,
)

#: Bodies above this size are parsed off the event loop (a thread hand-off costs more than
#: parsing a small body).
_OFF_LOOP_BYTES = 64 * 1024


async def read_events(request: Request, limits: Limits) -> Events:
    """The OpenLineage events of the body; raises ApiError (415) for a body that is not
    JSON, and the refusals of `ingest.body.decode_events`."""
    raw, gzipped = await _read(request, limits.max_bytes)
    if gzipped or len(raw) > _OFF_LOOP_BYTES:
        return await run_in_threadpool(
            decode_events, raw, gzipped=gzipped, limits=limits, source=REQUEST_BODY
        )
    return decode_events(raw, gzipped=gzipped, limits=limits, source=REQUEST_BODY)


async def read_json(request: Request, limits: Limits) -> Body:
    """The parsed JSON body (one document, not a batch of events)."""
    raw, gzipped = await _read(request, limits.max_bytes)
    if gzipped or len(raw) > _OFF_LOOP_BYTES:
        return await run_in_threadpool(
            decode, raw, gzipped=gzipped, limits=limits, source=REQUEST_BODY
        )
    return decode(raw, gzipped=gzipped, limits=limits, source=REQUEST_BODY)


async def _read(request: Request, max_bytes: int) -> tuple[bytes, bool]:
    """The body's bytes, and whether they are gzip. Lineage is read whatever its declared
    type when the `any_content_type` setting says so, for old senders."""
    if not request.app.state.settings.any_content_type:
        await check_content_type(request)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise ApiError(415, f"content-encoding {encoding} is not supported (use gzip)")
    return await _read_limited(request, max_bytes), encoding == "gzip"


async def check_content_type(request: Request) -> None:
    """Raise ApiError (415) unless the request's body is declared JSON: `application/json` or
    an `application/*+json` type, any parameters and any case; a request without a body may
    say nothing. A route whose body FastAPI parses depends on it (a coroutine: it never waits
    for a thread)."""
    header = request.headers.get("content-type")
    if is_json_type(header) or (header is None and not _has_body(request)):
        return
    sent = f"not {header.split(';')[0].strip()}" if header else "and none was sent"
    raise ApiError(
        415,
        f"content-type must be application/json, {sent}: send the body with the header "
        "Content-Type: application/json (or an application/*+json type)",
    )


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return length not in (None, "0") or "transfer-encoding" in request.headers


def is_json_type(header: str | None) -> bool:
    """Whether a Content-Type header names JSON: `application/json`, or a structured type
    whose suffix is `+json` (`application/vnd.openlineage+json`), RFC 6839."""
    if header is None:
        return False
    media = header.split(";")[0].strip().lower()
    if media == "application/json":
        return True
    kind, _, subtype = media.partition("/")
    return kind == "application" and subtype.endswith("+json") and len(subtype) > len("+json")


async def _read_limited(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(REQUEST_BODY, max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large(REQUEST_BODY, max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)
