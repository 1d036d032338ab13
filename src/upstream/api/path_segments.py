"""The one decoder of percent-encoded path segments.

Names hold `/` (`s3://bucket`), which clients send percent-encoded inside one segment
(`s3%3A%2F%2Fbucket`; marquez-python quotes with `safe=''`). The server decodes the whole path
before routing, so `%2F` would split the segment. `EncodedSegmentsRoute` matches against the
raw path instead and decodes each captured segment exactly once (design §4.4). A route whose
parameters are `{name:path}` still takes names sent with bare slashes, split as the router
splits them.
"""

from __future__ import annotations

from urllib.parse import unquote

from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope


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
