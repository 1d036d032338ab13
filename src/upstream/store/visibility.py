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
from upstream.store.dialect import id_filters, id_text, lists_a_namespace, names_a_namespace


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


def shown_documents(
    conn: Connection, document: sa.ColumnElement[str], visibility: Visibility
) -> sa.ColumnElement[bool]:
    """True for the stored JSON documents (`document`, text) a reader may see whole: every
    object in it, at any depth, that names a namespace (holds a `namespace` string, as every
    OpenLineage reference to a job or dataset does: the event's job and datasets, a parent
    or root job, `jobDependencies`, `symlinks`, `columnLineage` and `lineage` entries, any
    facet to come) names one `visibility` shows. A document returned verbatim (an event, a
    notification) is never rewritten, so one naming anything hidden is not shown at all."""
    if visibility.everything:
        return sa.true()
    return ~names_a_namespace(conn, document, lambda ns: ~shown_namespaces(ns, visibility))


def shown_listed(
    conn: Connection, listed: sa.ColumnElement[str | None], visibility: Visibility
) -> sa.ColumnElement[bool]:
    """True for the documents whose namespaces, listed beforehand as a JSON array
    (`model.named_namespaces`), are all ones `visibility` shows: what `shown_documents`
    decides, without reading the documents. A document without its list is shown to no
    scoped reader."""
    if visibility.everything:
        return sa.true()
    hidden = lists_a_namespace(conn, listed, lambda ns: ~shown_namespaces(ns, visibility))
    return sa.and_(listed.is_not(None), ~hidden)


def shown_events(conn: Connection, visibility: Visibility) -> sa.ColumnElement[bool]:
    """True for the stored events (`schema.events`) a reader may see: `shown_listed` of the
    namespaces each one's payload names, listed when it was accepted (`events.namespaces`),
    so a scoped page of events reads no payload but those it shows."""
    return shown_listed(conn, t.events.c.namespaces, visibility)


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
