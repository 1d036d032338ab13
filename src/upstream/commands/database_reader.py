"""The read API's answers computed straight from a database (`upstream lineage --db`), by the
services the API handlers call, so both give the same answers; only the transport differs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, TypeVar

from sqlalchemy.engine import Connection

from upstream.query.answers import (
    FieldPathsAnswer,
    FieldSummaryAnswer,
    GraphAnswer,
    LineageAnswer,
    LineageDiffAnswer,
    RunLineageAnswer,
)
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.field_lineage import FieldQuery, field_paths
from upstream.query.field_summary import field_summary
from upstream.query.lineage_diff import DiffParams, lineage_diff
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import DiffQuery, FieldLineageQuery, LineageQuery, RunQuery
from upstream.query.run_lineage import RunLineageParams, run_lineage
from upstream.query.whole_graph import lineage_graph
from upstream.settings import Settings
from upstream.store.engine import Store

T = TypeVar("T")
#: A field-lineage service: the answer about one field (namespace, dataset, field).
FieldService = Callable[[Connection, str, str, str, FieldQuery], T]


class _Caps(TypedDict):
    """The node and relation caps of the settings, as the lineage services take them."""

    max_nodes: int
    max_relations: int


class DatabaseReader:
    """The read API's answers computed straight from a database, by the same services and
    with the same settings (levels cap, node cap) the server would use; a `LineageReader`."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    def dataset_lineage(self, namespace: str, dataset: str, query: LineageQuery) -> LineageAnswer:
        params = LineageParams.parse(query, max_levels=self.settings.max_levels)
        with self.store.read() as conn:
            return dataset_lineage(conn, namespace, dataset, params, **self._caps())

    def lineage_diff(self, namespace: str, dataset: str, query: DiffQuery) -> LineageDiffAnswer:
        params = DiffParams.parse(query, max_levels=self.settings.max_levels)
        with self.store.read() as conn:
            return lineage_diff(conn, namespace, dataset, params, **self._caps())

    def run_lineage(self, run_id: str, query: RunQuery) -> RunLineageAnswer:
        params = RunLineageParams.parse(run_id, query, max_levels=self.settings.max_levels)
        with self.store.read() as conn:
            return run_lineage(conn, params, max_nodes=self.settings.max_lineage_nodes)

    def field_lineage(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> FieldPathsAnswer:
        return self._field(field_paths, (namespace, dataset, field), query)

    def field_lineage_summary(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> FieldSummaryAnswer:
        return self._field(field_summary, (namespace, dataset, field), query)

    def _field(
        self, service: FieldService[T], where: tuple[str, str, str], query: FieldLineageQuery
    ) -> T:
        """A field-lineage service's answer: the field at `where` (namespace, dataset,
        field) and the question parsed as the server parses it."""
        parsed = FieldQuery.parse(query, max_levels=self.settings.max_levels)
        with self.store.read() as conn:
            return service(conn, *where, parsed)

    def lineage_graph(self) -> GraphAnswer:
        with self.store.read() as conn:
            return lineage_graph(conn)

    def _caps(self) -> _Caps:
        return {
            "max_nodes": self.settings.max_lineage_nodes,
            "max_relations": self.settings.max_lineage_relations,
        }
