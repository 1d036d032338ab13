"""Where a command reads and writes: a server (`--url`, `--token`) or a database (`--db`).

Against a database the commands call the same services the API handlers call, so both give
the same answers; only the transport differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypedDict

from upstream.client.http import UpstreamClient
from upstream.client.positions import PositionFile
from upstream.client.reader import LineageReader
from upstream.commands.failures import CliError
from upstream.commands.sinks import DatabaseSink, EventSink, ServerSink
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
from upstream.query.run_lineage import RunLineageParams, run_lineage
from upstream.query.whole_graph import lineage_graph
from upstream.settings import Settings, load_settings
from upstream.store.engine import Store, sqlite_file
from upstream.store.migrate import current_revision, head_revision, upgrade


@dataclass(frozen=True)
class Target:
    """A server URL with its token, or a database URL when `db` is set (which wins)."""

    url: str
    token: str | None = None
    db: str | None = None

    @property
    def is_database(self) -> bool:
        return self.db is not None

    def client(self) -> UpstreamClient:
        # Each command is a process: the position of the last write is kept in a file.
        return UpstreamClient(self.url, token=self.token, positions=PositionFile())


@contextmanager
def database(url: str, *, migrate: bool) -> Iterator[Store]:
    """The store at `url`: migrated first when about to write, checked to be current when
    only read (reading must not create or change a database)."""
    path = sqlite_file(url)
    if not migrate and path is not None and not path.is_file():
        raise CliError(f"no database at {path}: load events first (upstream ingest --db)")
    store = Store(url)
    try:
        if migrate:
            upgrade(store)
        elif current_revision(store) != head_revision():
            raise CliError(
                f"the database {store.display_url} is not at the current schema; "
                f"run `upstream db upgrade --db {store.display_url}`"
            )
        yield store
    finally:
        store.dispose()


@contextmanager
def event_sink(target: Target) -> Iterator[EventSink]:
    """A sink storing batches on the target."""
    if target.db is not None:
        with database(target.db, migrate=True) as store:
            yield DatabaseSink(store, sql_lineage=load_settings(db_url=target.db).sql_lineage)
        return
    with target.client() as client:
        yield ServerSink(client)


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
    ) -> LineageAnswer:
        params = LineageParams.parse(
            max_levels=self.settings.max_levels,
            start=start,
            end=end,
            levels=levels,
            collapse=collapse,
            rollup=rollup,
            direction=direction,
            as_of=as_of,
        )
        with self.store.read() as conn:
            return dataset_lineage(conn, namespace, dataset, params, **self._caps())

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
    ) -> LineageDiffAnswer:
        params = DiffParams.parse(
            max_levels=self.settings.max_levels,
            from_window=from_window,
            to_window=to_window,
            as_of=as_of,
            against=against,
            start=start,
            end=end,
            levels=levels,
            collapse=collapse,
            rollup=rollup,
            direction=direction,
        )
        with self.store.read() as conn:
            return lineage_diff(conn, namespace, dataset, params, **self._caps())

    def run_lineage(
        self,
        run_id: str,
        *,
        direction: str | None = None,
        levels: int | None = None,
        as_of: str | None = None,
    ) -> RunLineageAnswer:
        params = RunLineageParams.parse(
            run_id,
            max_levels=self.settings.max_levels,
            direction=direction,
            levels=levels,
            as_of=as_of,
        )
        with self.store.read() as conn:
            return run_lineage(conn, params, max_nodes=self.settings.max_lineage_nodes)

    def field_lineage(
        self,
        namespace: str,
        dataset: str,
        field: str,
        *,
        start: str | None = None,
        end: str | None = None,
    ) -> FieldPathsAnswer:
        query = self._field_query(start=start, end=end)
        with self.store.read() as conn:
            return field_paths(conn, namespace, dataset, field, query)

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
    ) -> FieldSummaryAnswer:
        query = self._field_query(
            start=start,
            end=end,
            direction=direction,
            levels=None if levels is None else str(levels),
        )
        with self.store.read() as conn:
            return field_summary(conn, namespace, dataset, field, query)

    def lineage_graph(self) -> GraphAnswer:
        with self.store.read() as conn:
            return lineage_graph(conn)

    def _caps(self) -> _Caps:
        return {
            "max_nodes": self.settings.max_lineage_nodes,
            "max_relations": self.settings.max_lineage_relations,
        }

    def _field_query(
        self,
        *,
        start: str | None,
        end: str | None,
        direction: str | None = None,
        levels: str | None = None,
    ) -> FieldQuery:
        return FieldQuery.parse(
            max_levels=self.settings.max_levels,
            start=start,
            end=end,
            direction=direction,
            levels=levels,
        )


@contextmanager
def lineage_reader(target: Target) -> Iterator[LineageReader]:
    """Something answering the read API: the server's client, or a database reader."""
    if target.db is not None:
        with database(target.db, migrate=False) as store:
            yield DatabaseReader(store, load_settings(db_url=target.db))
        return
    with target.client() as client:
        yield client
