"""Every string of the URL checked as the body's strings are (`upstream.api.body`).

A path segment or query parameter that decodes to NUL, to bytes that are not UTF-8, or to an
encoded UTF-16 surrogate half is answered 400 naming the parameter, on every route, before any
route sees it. No database can store such text (PostgreSQL refuses NUL and surrogates; ids
join names with NUL), and a name that is not text cannot be looked up.

The check reads the raw bytes of the request line, because the server decodes the path with
replacement characters: `%FF` would reach a route as U+FFFD, and nothing could tell it from a
real U+FFFD any more. Once a request passes, every later decoding of its URL is exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from upstream.api.errors import error_response


@dataclass(frozen=True)
class UrlTextProblem:
    """Which parameter of the URL (`namespace`, `q`) holds text no store could keep, and why."""

    parameter: str
    reason: str


class UrlTextMiddleware:
    """Answers 400 for a request whose path segments or query parameters are not clean text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = url_text_problem(scope) if scope["type"] == "http" else None
        if problem is None:
            await self.app(scope, receive, send)
            return
        response = error_response(
            400,
            f"{problem.parameter}: {problem.reason}",
            errors=[{"path": problem.parameter, "message": problem.reason}],
        )
        await response(scope, receive, send)


def url_text_problem(scope: Scope) -> UrlTextProblem | None:
    """The first path segment or query parameter of the request that is not clean text."""
    segments = _raw_path(scope).split(b"/")
    for index, segment in enumerate(segments):
        reason = text_problem(segment)
        if reason:
            return UrlTextProblem(_path_parameter(scope, segments, index), reason)
    for pair in bytes(scope.get("query_string", b"")).split(b"&"):
        raw_name, _, raw_value = pair.partition(b"=")
        name_problem = text_problem(raw_name, query=True)
        if name_problem:
            return UrlTextProblem("query parameter name", name_problem)
        reason = text_problem(raw_value, query=True)
        if reason:
            name = unquote_to_bytes(raw_name.replace(b"+", b" ")).decode("utf-8")
            return UrlTextProblem(name or "query parameter without a name", reason)
    return None


def text_problem(raw: bytes, *, query: bool = False) -> str | None:
    """Why the percent-encoded `raw` (a `+` is a space in a query) is no clean text, if so."""
    if b"%" not in raw and raw.isascii() and b"\0" not in raw:
        return None  # the common case, decided without decoding
    decoded = unquote_to_bytes(raw.replace(b"+", b" ") if query else raw)
    if b"\0" in decoded:
        return "contains the NUL character (%00)"
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            decoded.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return f"is not valid UTF-8 (byte {exc.start + 1} of the decoded text)"
        return "contains a lone UTF-16 surrogate, which is no character"
    return None


def _raw_path(scope: Scope) -> bytes:
    raw = scope.get("raw_path")
    path = bytes(raw) if raw else str(scope["path"]).encode("utf-8", "surrogateescape")
    root = str(scope.get("root_path", "")).encode("utf-8", "surrogateescape")
    return path[len(root) :] if root and path.startswith(root) else path


def _path_parameter(scope: Scope, segments: list[bytes], index: int) -> str:
    """The name of the path parameter at segment `index`, from the app's OpenAPI document
    (every route's template, whichever router holds it): the template whose fixed segments the
    others match; `path` when no route has a parameter there."""
    document = getattr(scope.get("app"), "openapi", None)
    templates: Iterable[str] = document()["paths"] if callable(document) else ()
    for path in templates:
        template = path.split("/")
        if len(template) != len(segments) or not template[index].startswith("{"):
            continue
        if all(
            part.startswith("{") or part.encode() == segment
            for part, segment in zip(template, segments, strict=True)
        ):
            return template[index].strip("{}")
    return "path"
