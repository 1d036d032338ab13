"""Reading a JSON request body safely: size limits before and after gzip inflation, clear 4xx
answers for bad encodings, bad JSON, absurd nesting and values no database can store.

Work per request is bounded before any object is built: the body's bytes (before and after
inflation), then its shape (events per batch, values per event: `json_shape`). Large or
compressed bodies are inflated and parsed on a worker thread, so the event loop goes on
answering everyone else meanwhile."""

from __future__ import annotations

import json
import math
import re
import zlib
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from upstream.api.errors import ApiError
from upstream.api.json_shape import ShapeLimits, check_batch_size, check_events, check_shape
from upstream.model import json_text
from upstream.model.errors import join_path, json_syntax_reason

_JSON_TYPES = ("application/json", "application/x-ndjson", "text/json")

#: Deepest nesting of arrays and objects accepted. Real events nest under 20 levels (a deep
#: `schema` facet); the ceiling keeps every later step (validation, hashing, the database's
#: JSON parser) far from recursion limits. A 10,000-deep document is refused, not a crash.
MAX_JSON_DEPTH = 100

#: Escapes that decode to text PostgreSQL cannot store: NUL, and UTF-16 surrogate halves
#: (a lone half is no character at all). Only bodies that contain one are walked in full.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
#: Bodies above this size are parsed off the event loop (a thread hand-off costs more than
#: parsing a small body).
_OFF_LOOP_BYTES = 64 * 1024


@dataclass(frozen=True)
class Body:
    """A parsed body. `texts`: each event's compact JSON text, when the batch was measured
    on them after parsing (`json_shape.check_events`); they are the events' payloads, so no
    event is written twice."""

    document: Any
    texts: list[str] | None = None


async def read_json(request: Request, max_bytes: int, shape: ShapeLimits) -> Any:
    """The parsed JSON body; raises ApiError (400, 413, 415) for anything else."""
    return (await read_body(request, max_bytes, shape)).document


async def read_body(request: Request, max_bytes: int, shape: ShapeLimits) -> Body:
    """The parsed JSON body and, for a large batch, its events' texts (`Body`)."""
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if (
        content_type
        and not content_type.lower().endswith(("json", "+json"))
        and content_type.lower() not in _JSON_TYPES
    ):
        raise ApiError(415, f"content-type must be application/json, not {content_type}")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise ApiError(415, f"content-encoding {encoding} is not supported (use gzip)")
    raw = await _read_limited(request, max_bytes)
    gzipped = encoding == "gzip"
    if gzipped or len(raw) > _OFF_LOOP_BYTES:
        return await run_in_threadpool(decode_body, raw, gzipped, max_bytes, shape)
    return decode_body(raw, gzipped, max_bytes, shape)


def decode_body(raw: bytes, gzipped: bool, max_bytes: int, shape: ShapeLimits) -> Body:
    """Inflate (when `gzipped`), check the shape, parse."""
    if gzipped:
        raw = inflate(raw, max_bytes)
    measure = check_shape(raw, shape)
    document = parse_json(raw)
    check_batch_size(document, shape)
    if not (measure and isinstance(document, list)):
        return Body(document)
    texts = [json_text.dumps(event) for event in document]
    check_events(texts, shape.max_values)
    return Body(document, texts)


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
    """Gunzip with a ceiling, so a gzip bomb is refused before it fills memory. A body of
    several gzip members (as `cat a.gz b.gz` makes) inflates to their concatenation."""
    parts: list[bytes] = []
    size = 0
    rest = raw
    try:
        while True:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            part = inflater.decompress(rest, max_bytes - size + 1)
            size += len(part)
            if size > max_bytes or inflater.unconsumed_tail:
                raise ApiError(413, f"request body inflates to more than {max_bytes} bytes")
            if not inflater.eof:
                raise ApiError(400, "body: gzip stream is truncated")
            parts.append(part)
            rest = inflater.unused_data
            if not rest.strip(b"\0"):  # some writers pad the last member with zeros
                return b"".join(parts)
    except zlib.error as exc:
        raise ApiError(400, f"body: not valid gzip ({exc})") from None


def parse_json(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN or Infinity, numbers a database can hold, bounded nesting,
    and no string a database would refuse.

    orjson parses what it can parse exactly (`json_text.loads`); the rest, and every body it
    refuses, goes to `json`, whose complaints are the ones answered."""
    document = json_text.loads(raw)
    if document is None:
        document = _parse_slowly(raw)
    check_document(document, strings=_SUSPECT_ESCAPE.search(raw) is not None)
    return document


def _parse_slowly(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"body: not valid UTF-8 at byte {exc.start}") from None
    if not text.strip():
        raise ApiError(400, "body: empty; expected a JSON event or array of events")
    try:
        document = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400,
            f"body: malformed JSON at line {exc.lineno} column {exc.colno}: "
            f"{json_syntax_reason(exc)}",
        ) from None
    except RecursionError:
        raise ApiError(400, f"body: JSON is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # a number too long to convert, or a constant refused above
        raise ApiError(400, f"body: {str(exc).split(';')[0]}") from None
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the number {literal[:40]} is too large")
    return value


def check_document(document: Any, *, strings: bool) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and, when `strings`, keys or values holding
    NUL or a lone surrogate; the message names the path. Walks with a stack, not recursion,
    and spells a path out only for the value it complains about. Most documents need only
    their containers counted, level by level, which is far cheaper than visiting each value."""
    if not strings and _depth_within(document, MAX_JSON_DEPTH):
        return
    stack: list[tuple[Any, int, _Trail]] = [(document, 1, None)]
    while stack:
        value, depth, trail = stack.pop()
        if isinstance(value, dict | list) and depth > MAX_JSON_DEPTH:
            raise ApiError(400, f"body: {_path(trail)}: nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                if strings:
                    _check_text(key, (trail, key))
                stack.append((item, depth + 1, (trail, key)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (trail, i)) for i, item in enumerate(value))
        elif strings and isinstance(value, str):
            _check_text(value, trail)


def _depth_within(document: Any, limit: int) -> bool:
    """Whether no array or object of `document` is nested deeper than `limit` levels."""
    level = [document] if isinstance(document, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        level = [
            item
            for container in level
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, _CONTAINERS)
        ]
    return True


#: A tuple, not `dict | list`: isinstance takes a tuple a third faster, and this test runs
#: once per value of every body.
_CONTAINERS = (dict, list)


#: Where a value sits: (the parent's trail, key or index), None for the whole document.
_Trail = tuple[Any, str | int] | None


def _path(trail: _Trail) -> str:
    steps: list[str | int] = []
    while trail is not None:
        trail, step = trail
        steps.append(step)
    path = ""
    for step in reversed(steps):
        text = f"[{step}]" if isinstance(step, int) else step.encode("utf-8", "replace").decode()
        path = join_path(path, text)
    path = path or "document"
    return path if len(path) <= 120 else f"{path[:120]}…"


def _check_text(text: str, trail: _Trail) -> None:
    if "\0" in text:
        raise ApiError(400, f"body: {_path(trail)}: contains the NUL character (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(
            400, f"body: {_path(trail)}: contains a lone UTF-16 surrogate escape"
        ) from None
