"""The read API as the command line uses it, whoever answers it.

`UpstreamClient` asks a server over HTTP; `commands.database_reader.DatabaseReader` calls the same
services on a database directly. Both take the same arguments and give the same answers (the
JSON a server would send), so a command is written once for both (`upstream lineage --url` or
`--db`). A refused parameter or an unknown entity is an error either way: the client raises
`ApiRejected`, the database reader the service's own `InvalidParameter` or `NotFound`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from upstream.query.lineage_query import (
        DiffQuery,
        FieldLineageQuery,
        LineageQuery,
        RunQuery,
    )

JsonObject = dict[str, Any]
#: An answer as the CLI reads it: the server's JSON, or the service's declared shape.
Answer = Mapping[str, Any]


class LineageReader(Protocol):
    """The lineage answers the CLI reads: dataset lineage and its diff, run lineage, field
    lineage and its summary, and the whole graph. Each question is one object as asked
    (`upstream.query.lineage_query`)."""

    def dataset_lineage(self, namespace: str, dataset: str, query: LineageQuery) -> Answer: ...

    def lineage_diff(self, namespace: str, dataset: str, query: DiffQuery) -> Answer: ...

    def run_lineage(self, run_id: str, query: RunQuery) -> Answer: ...

    def field_lineage(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> Answer: ...

    def field_lineage_summary(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> Answer: ...

    def lineage_graph(self) -> Answer: ...
