"""The namespaces a reader may see, as the condition a statement puts on a namespace column
(design §5): the one translation of `model.access.Visibility` into SQL, so every list and
search filters the same way the walks do."""

from __future__ import annotations

import uuid
from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import Visibility
from upstream.store import schema as t
from upstream.store.dialect import id_filters, id_text, json_text_at, names_a_dataset

#: Where an OpenLineage event names a job besides its own: the parent facet's job, and the
#: root job it names.
_PARENT_JOBS = (
    ("run", "facets", "parent", "job", "namespace"),
    ("run", "facets", "parent", "root", "job", "namespace"),
)


def shown_namespaces(
    column: sa.ColumnElement[str], visibility: Visibility
) -> sa.ColumnElement[bool]:
    """True for the rows whose namespace (`column`) `visibility` shows: equal to an exact
    pattern, or starting with a wildcard pattern's prefix, compared as text (LIKE would fold case on
    SQLite and read `%` and `_` in a namespace as wildcards)."""
    if visibility.everything:
        return sa.true()
    tests: list[sa.ColumnElement[bool]] = []
    for pattern in visibility.patterns:
        if pattern.endswith("*"):
            prefix = pattern[:-1]
            tests.append(sa.func.substr(column, 1, len(prefix)) == prefix)
        else:
            tests.append(column == pattern)
    return sa.or_(sa.false(), *tests)


def shown_events(conn: Connection, visibility: Visibility) -> sa.ColumnElement[bool]:
    """True for the stored events (`schema.events`) a reader may see whole: `visibility`
    shows the namespace of its job, of every dataset it names (its inputs and outputs, or a
    dataset event's dataset) and of the parent and root jobs its parent facet names. An
    event is returned verbatim, never rewritten, so one naming anything hidden is not
    shown at all."""
    if visibility.everything:
        return sa.true()
    e = t.events.c
    named: list[sa.ColumnElement[str]] = [e.job_namespace, e.dataset_namespace]
    named += [json_text_at(conn, e.payload, *path) for path in _PARENT_JOBS]
    return sa.and_(
        *(sa.or_(column.is_(None), shown_namespaces(column, visibility)) for column in named),
        ~names_a_dataset(conn, e.payload, lambda ns: ~shown_namespaces(ns, visibility)),
    )


def entity_namespaces(
    conn: Connection, table: sa.Table, ids: Collection[str] | None = None
) -> dict[str, str]:
    """The namespace of each entity of `table` (datasets or jobs), by id as hyphenated text:
    of `ids`, or of every row."""
    columns = (id_text(table.c.id, conn.dialect.name), table.c.namespace)
    if ids is None:
        return dict(conn.execute(sa.select(*columns)).tuples().all())
    found: dict[str, str] = {}
    for matches in id_filters(conn, table.c.id, [uuid.UUID(i) for i in ids]):
        found.update(conn.execute(sa.select(*columns).where(matches)).tuples().all())
    return found
