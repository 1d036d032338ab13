"""Python clients of Upstream: the field-operations recorder for programs, and the HTTP client
the command line talks to a server with. The recorder is imported on first use (it loads
OpenLineage's client), so the command line starts without it."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from upstream.client.recorder import LineageRecorder, RecordedRun

__all__ = ["DEFAULT_URL", "LineageRecorder", "RecordedRun"]

#: The server a client talks to unless told otherwise (`upstream serve`'s own default).
DEFAULT_URL = "http://127.0.0.1:5000"


def __getattr__(name: str) -> Any:
    if name not in ("LineageRecorder", "RecordedRun"):
        raise AttributeError(f"module 'upstream.client' has no attribute {name!r}")
    value = getattr(import_module("upstream.client.recorder"), name)
    globals()[name] = value
    return value
