"""The rows a change makes the graph index read again (`store.graph_rows` given runs and
owners) are found through an index, never by reading a whole table: on a large store one
unindexed read cost each change 0.44 s of a second's scan of a million flows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tests.builders import column_lineage, ds, run_event
from upstream.ingest.service import ingest_documents
from upstream.store import graph_rows
from upstream.store import schema as t
from upstream.store.engine import Store

NS = "warehouse"

#: The readers a change calls with the runs and owners it names.
READERS: dict[str, Callable[..., Any]] = {
    "relations": graph_rows.relation_rows,
    "flows": graph_rows.flow_rows,
    "job edges": graph_rows.job_edge_rows,
    "field links": graph_rows.field_link_rows,
}


def _statements(conn: Connection, read: Callable[[], Any]) -> list[tuple[str, Any]]:
    """Every statement `read` sends on `conn`, with its parameters."""
    sent: list[tuple[str, Any]] = []

    def note(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    sa.event.listen(conn, "before_cursor_execute", note)
    try:
        found = read()
        if isinstance(found, Iterator):
            list(found)
    finally:
        sa.event.remove(conn, "before_cursor_execute", note)
    return sent


def _plan(conn: Connection, statement: str, parameters: Any) -> str:
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    if conn.dialect.name == "postgresql":
        # Tiny tables are cheaper to scan than to search: the planner must say which
        # index it would use if the table were large.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {statement}", parameters)
    else:
        cursor.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)
    return "\n".join(str(row[-1]) for row in cursor.fetchall())


def _scans(plan: str, dialect: str) -> list[str]:
    """The derived tables `plan` reads whole."""
    tables = ("relations", "flows", "lineage_links", "lineage_set_edges", "declared_")
    if dialect == "postgresql":
        return [
            line
            for line in plan.splitlines()
            if "Seq Scan on" in line and any(f" {name}" in line for name in tables)
        ]
    return [
        line
        for line in plan.splitlines()
        if line.startswith("SCAN") and any(f" {name}" in line for name in tables)
    ]


@pytest.mark.parametrize("table", list(READERS))
def test_a_changes_rows_are_found_by_an_index(store: Store, table: str) -> None:
    lineage = column_lineage({"id": [(NS, "raw", "id")]})
    event = run_event(
        (NS, "load"), inputs=[ds(NS, "raw")], outputs=[ds(NS, "staged", columnLineage=lineage)]
    )
    ingest_documents(store, [event], batch=True)
    with store.read() as conn:
        run = conn.execute(sa.select(t.runs.c.id)).scalar_one()
        job = conn.execute(sa.select(t.jobs.c.id)).scalar_one()
        sent = _statements(conn, lambda: READERS[table](conn, [run], [job]))
        assert sent
        scans = [
            s
            for statement, parameters in sent
            for s in _scans(_plan(conn, statement, parameters), conn.dialect.name)
        ]
    assert scans == []
