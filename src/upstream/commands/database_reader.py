"""The read API's answers computed straight from a database (`upstream lineage --db`), by the
services the API handlers call, so both give the same answers; only the transport differs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypedDict, TypeVar

from sqlalchemy.engine import Connection

from upstream.model.hierarchy import parse_group_key
from upstream.query.answers import (
    FieldPathsAnswer,
    FieldSummaryAnswer,
    GraphAnswer,
    HierarchyMapAnswer,
    ImpactAnswer,
    LineageAnswer,
    LineageDiffAnswer,
    RunLineageAnswer,
)
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.field_lineage import FieldQuery, field_paths
from upstream.query.field_summary import field_summary
from upstream.query.graph_index.index import index_of
from upstream.query.hierarchy_map import hierarchy_map
from upstream.query.impact import dataset_impact, field_impact
from upstream.query.lineage_diff import DiffParams, lineage_diff
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import (
    DiffQuery,
    FieldLineageQuery,
    ImpactQuery,
    LineageQuery,
    MapQuery,
    RunQuery,
)
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
        with self._read(fields=False) as conn:
            return dataset_lineage(conn, namespace, dataset, params, **self._caps())

    def lineage_diff(self, namespace: str, dataset: str, query: DiffQuery) -> LineageDiffAnswer:
        params = DiffParams.parse(query, max_levels=self.settings.max_levels)
        with self._read() as conn:
            return lineage_diff(conn, namespace, dataset, params, **self._caps())

    def run_lineage(self, run_id: str, query: RunQuery) -> RunLineageAnswer:
        params = RunLineageParams.parse(run_id, query, max_levels=self.settings.max_levels)
        with self._read(fields=False) as conn:
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
        with self._read() as conn:
            return service(conn, *where, parsed)

    def impact(
        self, namespace: str, dataset: str, query: ImpactQuery, *, field: str | None = None
    ) -> ImpactAnswer:
        params = LineageParams.parse(query.lineage(), max_levels=self.settings.max_levels)
        with self._read() as conn:
            if field is None:
                return dataset_impact(conn, namespace, dataset, params, **self._caps())
            return field_impact(
                conn, namespace, dataset, field, params, max_nodes=self.settings.max_lineage_nodes
            )

    def lineage_graph(self) -> GraphAnswer:
        with self._read() as conn:
            return lineage_graph(conn)

    def hierarchy_map(self, query: MapQuery) -> HierarchyMapAnswer:
        within = parse_group_key(query.within) if query.within else ()
        with self._read() as conn:
            return hierarchy_map(conn, query.level, within)

    @contextmanager
    def _read(self, *, fields: bool = True) -> Iterator[Connection]:
        """A read transaction, on an index holding the field graph only when the question
        walks fields: a command asking a dataset's or a run's lineage loads a third less. A
        long one: a command run by hand on a large store waits for its index to load rather
        than fail at a request's deadline."""
        index_of(self.store.engine).fields_wanted = fields
        with self.store.read(long=True) as conn:
            yield conn

    def _caps(self) -> _Caps:
        return {
            "max_nodes": self.settings.max_lineage_nodes,
            "max_relations": self.settings.max_lineage_relations,
        }
