"""What the Marquez routes share: percent-encoded path segments, errors, one read or change
per request.

Names hold `/` (`s3://bucket`), which clients send percent-encoded inside one segment
(`s3%3A%2F%2Fbucket`; marquez-python quotes with `safe=''`). The server decodes the whole path
before routing, so `%2F` would split the segment. `EncodedSegmentsRoute` matches against the
raw path instead and decodes each captured segment exactly once (design §4.4).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import unquote

from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope

from upstream.api.errors import ApiError
from upstream.api.params import Limit, Offset, refused
from upstream.model.errors import Problem
from upstream.model.nodeid import InvalidNodeId
from upstream.query.marquez.common import NotFound, Page
from upstream.settings import Settings
from upstream.store.engine import Store

T = TypeVar("T")


class EncodedSegmentsRoute(APIRoute):
    """An API route whose path parameters are the raw segments, each decoded once."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        raw = scope.get("raw_path")
        if scope["type"] != "http" or not raw:
            return super().matches(scope)
        path = raw.decode("utf-8", "surrogateescape")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        match, child = super().matches({**scope, "path": path, "root_path": ""})
        if match != Match.NONE:
            child["path_params"] = {
                key: unquote(value) if isinstance(value, str) else value
                for key, value in child["path_params"].items()
            }
        return match, child


def read(store: Store, query: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one query on one snapshot; unknown entities are 404, malformed node ids 400."""
    try:
        with store.read() as conn:
            return query(conn, *args, **kwargs)
    except NotFound as exc:
        raise ApiError(404, exc.message) from None
    except InvalidNodeId as exc:  # its message is "nodeId: why"
        raise refused([Problem("nodeId", str(exc).removeprefix("nodeId: "))]) from None


def change(store: Store, work: Callable[..., T], *args: Any) -> T:
    """Run one change (`work(conn, *args, now)`) in one write transaction; unknown entities
    are 404. The time is taken once, so a retried transaction writes the same one."""
    now = datetime.now(UTC)
    try:
        return store.write(lambda conn: work(conn, *args, now))
    except NotFound as exc:
        raise ApiError(404, exc.message) from None


def page(limit: Limit = 100, offset: Offset = 0) -> Page:
    """Marquez's `limit`/`offset` query parameters."""
    return Page(limit=limit, offset=offset)


def checked_depth(depth: int, settings: Settings) -> int:
    """`depth` within the configured cap, else 400 naming the parameter."""
    if depth > settings.max_levels:
        raise refused([Problem("depth", f"must be at most {settings.max_levels}, not {depth}")])
    return depth
