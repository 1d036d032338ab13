"""Where a command reads and writes: a server (`--url`, `--token`) or a database (`--db`).

Against a database the commands call the same services the API handlers call, so both give
the same answers; only the transport differs. Each side is imported when it is chosen: a
command asking a server loads no database, and one on a database no HTTP client.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from upstream.client.http import UpstreamClient
    from upstream.client.reader import LineageReader
    from upstream.commands.sinks import EventSink


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
        from upstream.client.http import UpstreamClient
        from upstream.client.positions import PositionFile

        # Each command is a process: the position of the last write is kept in a file.
        return UpstreamClient(self.url, token=self.token, positions=PositionFile())


@contextmanager
def event_sink(target: Target) -> Iterator[EventSink]:
    """A sink storing batches on the target."""
    if target.db is not None:
        from upstream.commands.database import database
        from upstream.commands.database_sink import DatabaseSink
        from upstream.settings import load_settings

        with database(target.db, migrate=True) as store:
            yield DatabaseSink(store, sql_lineage=load_settings(db_url=target.db).sql_lineage)
        return
    from upstream.commands.sinks import ServerSink

    with target.client() as client:
        yield ServerSink(client)


@contextmanager
def lineage_reader(target: Target) -> Iterator[LineageReader]:
    """Something answering the read API: the server's client, or a database reader."""
    if target.db is not None:
        from upstream.commands.database import database
        from upstream.commands.database_reader import DatabaseReader
        from upstream.settings import load_settings

        with database(target.db, migrate=False) as store:
            yield DatabaseReader(store, load_settings(db_url=target.db))
        return
    with target.client() as client:
        yield client
