"""Reading a JSON request body safely: size limits before and after gzip inflation, clear 4xx
answers for bad encodings, bad JSON and absurd nesting."""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import Request

from upstream.api.errors import ApiError

_JSON_TYPES = ("application/json", "application/x-ndjson", "text/json")


async def read_json(request: Request, max_bytes: int) -> Any:
    """The parsed JSON body; raises ApiError (400, 413, 415) for anything else."""
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if (
        content_type
        and not content_type.lower().endswith(("json", "+json"))
        and content_type.lower() not in _JSON_TYPES
    ):
        raise ApiError(415, f"content-type must be application/json, not {content_type}")
    raw = await _read_limited(request, max_bytes)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding == "gzip":
        raw = inflate(raw, max_bytes)
    elif encoding not in ("identity", ""):
        raise ApiError(415, f"content-encoding {encoding} is not supported (use gzip)")
    return parse_json(raw)


async def _read_limited(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"request body is larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise ApiError(413, f"request body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def inflate(raw: bytes, max_bytes: int) -> bytes:
    """Gunzip with a ceiling, so a gzip bomb is refused before it fills memory."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(raw, max_bytes + 1)
        if len(data) > max_bytes or inflater.unconsumed_tail:
            raise ApiError(413, f"request body inflates to more than {max_bytes} bytes")
        if not inflater.eof:
            raise ApiError(400, "body: gzip stream is truncated")
    except zlib.error as exc:
        raise ApiError(400, f"body: not valid gzip ({exc})") from None
    return data


def parse_json(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"body: not valid UTF-8 at byte {exc.start}") from None
    if not text.strip():
        raise ApiError(400, "body: empty; expected a JSON event or array of events")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"body: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise ApiError(400, "body: JSON is nested too deeply") from None
