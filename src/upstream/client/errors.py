"""What a request to a server can fail with. Apart from the HTTP client, so that a command
reading a database reports failures without loading an HTTP library."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class UpstreamError(Exception):
    """The server could not be reached, or it refused the request."""


class ApiRejected(UpstreamError):
    """The server answered with an error status; `errors` locates each problem when it can."""

    def __init__(self, status: int, message: str, errors: Sequence[Mapping[str, Any]] = ()):
        super().__init__(f"{message} (HTTP {status})")
        self.status = status
        self.message = message
        self.errors = [dict(e) for e in errors]
