"""A lineage set's edges have no key, only an index of their set (migration 0032): they are
written once, all together, and read and deleted only as a whole set, in their order. On
SQLite the run months are kept in their key's B-tree alone (WITHOUT ROWID). The migration
makes both of an existing store so, and keeps every row and answer."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from tests.builders import column_lineage, ds, run_event
from tests.store.test_graph_rows import _plan, _scans, _statements
from tests.store.test_ids_as_bytes import _answers, _rows, downgrade, filled
from upstream.ingest.service import ingest_documents
from upstream.store import graph_rows
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.lineage_writer import set_edges
from upstream.store.migrate import upgrade

EDGE_INDEXES = {
    "ix_lineage_set_edges_set_id",
    "ix_lineage_set_edges_source_dataset_id",
    "ix_lineage_set_edges_target_dataset_id",
    "ix_lineage_set_edges_from_job",
    "ix_lineage_set_edges_to_job",
    "ix_lineage_set_edges_source_job_id",
    "ix_lineage_set_edges_target_job_id",
}


def _layout(store: Store) -> dict[str, Any]:
    """The edges' key and indexes, and on SQLite whether the run months have a row id."""
    with store.read() as conn:
        inspector = sa.inspect(conn)
        found: dict[str, Any] = {
            "edge key": inspector.get_pk_constraint("lineage_set_edges")["constrained_columns"],
            "edge indexes": {str(i["name"]) for i in inspector.get_indexes("lineage_set_edges")},
        }
        if store.dialect == "sqlite":
            found["run months kept by rowid"] = _has_rowid(conn, "run_months")
    return found


def _has_rowid(conn: sa.Connection, table: str) -> bool:
    try:
        conn.exec_driver_sql(f"SELECT rowid FROM {table} LIMIT 1").all()
    except sa.exc.OperationalError:
        return False
    return True


def _new_layout(store: Store) -> dict[str, Any]:
    layout: dict[str, Any] = {"edge key": [], "edge indexes": EDGE_INDEXES}
    if store.dialect == "sqlite":
        layout["run months kept by rowid"] = False
    return layout


def _sets(store: Store) -> dict[uuid.UUID, list[Any]]:
    """Every stored set's edges, in the order the writer reads them to merge."""
    with store.read() as conn:
        ids = set(conn.execute(sa.select(t.lineage_sets.c.id)).scalars())
        return dict(set_edges(conn, ids))


def test_a_new_store_keeps_edges_by_their_set_alone(store: Store) -> None:
    assert _layout(store) == _new_layout(store)


def test_a_sets_edges_are_found_by_its_index_in_their_order(store: Store) -> None:
    """Three field edges into one output: read back in the set's order by the writer (which
    merges sets by it) and by the field graph, each through the set's index."""
    lineage = column_lineage(
        {"c": [("lake", "raw", "c")], "a": [("lake", "raw", "a")], "b": [("lake", "raw", "b")]}
    )
    event = run_event(
        ("jobs", "a"),
        inputs=[ds("lake", "raw")],
        outputs=[ds("lake", "mid", columnLineage=lineage)],
    )
    ingest_documents(store, [event], batch=True)
    [edges] = _sets(store).values()
    # The set's canonical order: the output's fields by name (`model.lineage_sets`).
    assert [edge.target_field for edge in edges if edge.target_field] == ["a", "b", "c"]
    with store.read() as conn:
        [set_id] = conn.execute(sa.select(t.lineage_sets.c.id)).scalars()
        reads = [
            lambda: set_edges(conn, [set_id]),
            lambda: graph_rows.field_set_edge_rows(conn, [str(set_id)]),
        ]
        scans = [
            scan
            for read in reads
            for statement, parameters in _statements(conn, read)
            for scan in _scans(_plan(conn, statement, parameters), conn.dialect.name)
        ]
    assert scans == []


def test_the_migration_keeps_every_row_and_answer(migrated_copy_url: str) -> None:
    """Down to 0031 the edges are keyed by (set, position) again, and SQLite's run months
    kept by row id; up again the layout is a new store's, with every row, set (in its order)
    and answer, and on SQLite the planner's statistics of the edges' new index."""
    store = filled(migrated_copy_url)
    try:
        sqlite = store.dialect == "sqlite"
        before = (_answers(store), _rows(store), _sets(store))
        downgrade(store, "0031")
        old: dict[str, Any] = {
            "edge key": ["set_id", "position"],
            "edge indexes": EDGE_INDEXES - {"ix_lineage_set_edges_set_id"},
        }
        if sqlite:
            old["run months kept by rowid"] = True
        assert _layout(store) == old
        assert _rows(store) == before[1]
        upgrade(store)
        assert _layout(store) == _new_layout(store)
        assert (_answers(store), _rows(store), _sets(store)) == before
        if sqlite:
            with store.read() as conn:
                analysed = "SELECT idx FROM sqlite_stat1 WHERE tbl = 'lineage_set_edges'"
                assert "ix_lineage_set_edges_set_id" in set(
                    conn.exec_driver_sql(analysed).scalars()
                )
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
    finally:
        store.dispose()
