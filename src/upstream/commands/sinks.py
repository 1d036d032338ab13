"""Where `upstream ingest` sends batches: a server's `POST /api/v1/lineage` (`ServerSink`), or a
database through the same ingestion service the server calls (`database_sink.DatabaseSink`).
Both refuse an invalid batch whole and say which events were wrong, by their index in the
batch."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from upstream.client.errors import ApiRejected
from upstream.client.http import UpstreamClient

_INDEXED = re.compile(r"^\[(\d+)\]\.?(.*)$", re.DOTALL)


@dataclass(frozen=True)
class EventProblem:
    """Why the event at `index` of a batch (None: the batch as a whole) was refused."""

    index: int | None
    message: str


class BatchRejected(Exception):
    """Nothing of the batch was stored; `problems` say which events were wrong and why."""

    def __init__(self, message: str, problems: Sequence[EventProblem]) -> None:
        super().__init__(message)
        self.message = message
        self.problems = list(problems)


class BatchTooLarge(Exception):
    """The server refuses batches this large; send smaller ones."""


class EventSink(Protocol):
    """Stores one batch all-or-nothing; returns how many of its events were already stored
    when the sink can tell (None when it cannot)."""

    def send(self, documents: Sequence[dict[str, Any]]) -> int | None: ...


def problems_from(entries: Sequence[tuple[str, str]]) -> list[EventProblem]:
    """(path, message) pairs, whose paths start with the batch index `[i]`, as problems."""
    found: list[EventProblem] = []
    for path, message in entries:
        match = _INDEXED.match(path)
        if match:
            where = match.group(2)
            found.append(
                EventProblem(int(match.group(1)), f"{where}: {message}" if where else message)
            )
        else:
            found.append(EventProblem(None, f"{path}: {message}" if path else message))
    return found


class ServerSink:
    """Posts each batch as one JSON array to an Upstream (or any OpenLineage) server."""

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client

    def send(self, documents: Sequence[dict[str, Any]]) -> int | None:
        try:
            self.client.post_events(documents)
        except ApiRejected as exc:
            if exc.status == 413 and len(documents) > 1:
                raise BatchTooLarge(exc.message) from exc
            if exc.status not in (400, 422):
                raise
            entries = [(str(e.get("path", "")), str(e.get("message", ""))) for e in exc.errors]
            raise BatchRejected(exc.message, problems_from(entries)) from exc
        return None
