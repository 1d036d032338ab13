"""The read API as the command line uses it, whoever answers it.

`UpstreamClient` asks a server over HTTP; `commands.database_reader.DatabaseReader` calls the same
services on a database directly. Both take the same arguments and give the same answers (the
JSON a server would send), so a command is written once for both (`upstream lineage --url` or
`--db`). A refused parameter or an unknown entity is an error either way: the client raises
`ApiRejected`, the database reader the service's own `InvalidParameter` or `NotFound`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

JsonObject = dict[str, Any]
#: An answer as the CLI reads it: the server's JSON, or the service's declared shape.
Answer = Mapping[str, Any]


class LineageReader(Protocol):
    """The lineage answers the CLI reads: dataset lineage and its diff, run lineage, field
    lineage and its summary, and the whole graph."""

    def dataset_lineage(
        self,
        namespace: str,
        dataset: str,
        *,
        start: str | None = None,
        end: str | None = None,
        levels: int | None = None,
        direction: str | None = None,
        collapse: Iterable[str] = (),
        rollup: str | None = None,
        as_of: str | None = None,
    ) -> Answer: ...

    def lineage_diff(
        self,
        namespace: str,
        dataset: str,
        *,
        from_window: str | None = None,
        to_window: str | None = None,
        as_of: str | None = None,
        against: str | None = None,
        start: str | None = None,
        end: str | None = None,
        levels: int | None = None,
        direction: str | None = None,
        collapse: Iterable[str] = (),
        rollup: str | None = None,
    ) -> Answer: ...

    def run_lineage(
        self,
        run_id: str,
        *,
        direction: str | None = None,
        levels: int | None = None,
        as_of: str | None = None,
    ) -> Answer: ...

    def field_lineage(
        self,
        namespace: str,
        dataset: str,
        field: str,
        *,
        start: str | None = None,
        end: str | None = None,
    ) -> Answer: ...

    def field_lineage_summary(
        self,
        namespace: str,
        dataset: str,
        field: str,
        *,
        direction: str | None = None,
        levels: int | None = None,
        start: str | None = None,
        end: str | None = None,
    ) -> Answer: ...

    def lineage_graph(self) -> Answer: ...
