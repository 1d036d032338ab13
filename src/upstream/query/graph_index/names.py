"""The namespace and name of the datasets and jobs answers show, kept by the process beside
its graph index (design §6), so an answer names its nodes without a statement.

An id is the UUIDv5 of its kind, namespace and name (`upstream.model.identity`): the name
read once for an id is that id's name for good, whatever changes later, so the names need no
change log. Ids not yet held are read in one statement (`store.graph_rows.entity_names`) and
kept; an id with no row stays unnamed and is asked again next time, as a read of the row
would.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import graph_rows

#: A dataset's or job's (namespace, name).
Name = tuple[str, str]


class EntityNames:
    """The names of one table's entities (datasets or jobs) by id text, read on first use.
    Shared by the threads of a process: a name is set once and never changed, so a reader
    racing another reads the same row twice at worst."""

    def __init__(self, table: sa.Table) -> None:
        self._table = table
        self._known: dict[str, Name] = {}

    def of(self, conn: Connection, ids: Collection[str]) -> dict[str, Name]:
        """The name of each of `ids` that has a row (ids as their hyphenated text)."""
        known = self._known
        missing = [i for i in ids if i not in known]
        if missing:
            known.update(graph_rows.entity_names(conn, self._table, missing))
        return {i: known[i] for i in ids if i in known}
