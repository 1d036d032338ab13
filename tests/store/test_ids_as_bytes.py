"""Ids are kept as their 16 bytes on both databases (`schema.Id`): PostgreSQL's `uuid`, and on
SQLite a BLOB, where SQLAlchemy's `Uuid` kept 32 hex digits (migration 0031). The code above
the store still sees `uuid.UUID`, and the graph index the ids' hyphenated text."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import command

from tests.builders import column_lineage, ds, job_event, run_event
from tests.readback import dataset_flows, edges, relations, stored_id
from upstream.ingest.service import ingest_documents
from upstream.store import graph_rows
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

RUN = "0b0e7d1c-5c1b-4f51-9d1e-2f3c4d5e6f70"
PARENT = "7a1e2b3c-4d5e-4f60-8172-8394a5b6c7d8"

#: Every id column of the schema, by table.
ID_COLUMNS = {
    table.name: [c.name for c in table.columns if c.type is t.Id]
    for table in t.metadata.sorted_tables
    if any(c.type is t.Id for c in table.columns)
}


def _events() -> list[dict[str, Any]]:
    """A task run of a workflow run (raw -> mid, with a field edge) and a job's declaration
    (mid -> out, with a field edge): ids in runs, relations, flows, sets, links, versions."""
    return [
        run_event(
            ("jobs", "a"),
            run_id=RUN,
            inputs=[ds("lake", "raw")],
            outputs=[
                ds("lake", "mid", columnLineage=column_lineage({"id": [("lake", "raw", "id")]}))
            ],
            parent=(("jobs", "flow"), PARENT),
        ),
        job_event(
            ("jobs", "b"),
            inputs=[ds("lake", "mid")],
            outputs=[
                ds("lake", "out", columnLineage=column_lineage({"id": [("lake", "mid", "id")]}))
            ],
        ),
    ]


def _stored_forms(store: Store) -> set[tuple[str, int]]:
    """What SQLite holds in the id columns: (storage class, length) of every non-NULL id."""
    found: set[tuple[str, int]] = set()
    with store.read() as conn:
        for table, columns in ID_COLUMNS.items():
            for column in columns:
                query = f"SELECT DISTINCT typeof({column}), length({column}) FROM {table}"
                found.update(
                    (kind, size) for kind, size in conn.exec_driver_sql(query) if kind != "null"
                )
    return found


def _declared_types(store: Store) -> set[str]:
    """The declared type of every id column."""
    with store.read() as conn:
        inspector = sa.inspect(conn)
        return {
            str(c["type"])
            for table, columns in ID_COLUMNS.items()
            for c in inspector.get_columns(table)
            if c["name"] in columns
        }


def test_a_new_store_keeps_every_id_as_16_bytes(store: Store) -> None:
    ingest_documents(store, _events(), batch=True)
    if store.dialect == "sqlite":
        assert _declared_types(store) == {"BLOB"}
        assert _stored_forms(store) == {("blob", 16)}
    else:
        assert _declared_types(store) == {"UUID"}
    # Read back as uuids, and as the ids' text by the graph index's readers.
    with store.read() as conn:
        assert uuid.UUID(RUN) in set(conn.execute(sa.select(t.runs.c.id)).scalars())
        runs = {row[0]: row[5] for rows in graph_rows.run_rows(conn) for row in rows}
        assert runs == {RUN: PARENT, PARENT: None}
        by_text = list(graph_rows.run_rows(conn, [uuid.UUID(PARENT)]))
        assert [row[0] for rows in by_text for row in rows] == [PARENT]


def _answers(store: Store) -> dict[str, Any]:
    """What readers see: the graph index's rows, and stored facts read by id."""
    with store.read() as conn:
        index = {
            reader.__name__: sorted(map(repr, (row for rows in reader(conn) for row in rows)))
            for reader in (
                graph_rows.run_rows,
                graph_rows.relation_rows,
                graph_rows.flow_rows,
                graph_rows.job_edge_rows,
                graph_rows.field_link_rows,
                graph_rows.field_set_edge_rows,
            )
        }
        names = dict(
            graph_rows.entity_names(conn, t.datasets, graph_rows.entity_ids(conn, t.datasets))
        )
    return {
        **index,
        "names": names,
        "edges": edges(store, implied=True),
        "relations": relations(store),
        "flows": dataset_flows(store, "lake/raw"),
    }


def _rows(store: Store) -> dict[str, list[str]]:
    """Every row of every table, ids as `stored_id` reads them at any revision."""
    found: dict[str, list[str]] = {}
    with store.read() as conn:
        for name in ID_COLUMNS:
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            found[name] = sorted(
                repr(tuple(stored_id(value) for value in row))
                for row in conn.execute(sa.select(table))
            )
    return found


def _schema(store: Store) -> list[tuple[str, str]]:
    """Every table's and index's statement, as SQLite keeps them."""
    with store.read() as conn:
        query = "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
        return [(name, sql) for name, sql in conn.exec_driver_sql(query)]


def downgrade(store: Store, revision: str) -> None:
    with session_lock(store, 0) as conn:
        command.downgrade(alembic_config(conn), revision)
        conn.commit()


def filled(url: str) -> Store:
    """A store at `url` holding `_events()`, analysed on SQLite (the planner's statistics,
    which a migration that makes tables again keeps)."""
    store = Store(url)
    ingest_documents(store, _events(), batch=True)
    if store.dialect == "sqlite":
        store.write(lambda conn: conn.exec_driver_sql("ANALYZE"))
    return store


def test_the_migration_keeps_every_row_and_answer(migrated_copy_url: str) -> None:
    """Down to 0030 the ids are hex digits again, as SQLAlchemy's `Uuid` wrote them; up
    again they are bytes, with every row, index, key and the planner's statistics kept, and
    the same answers."""
    store = filled(migrated_copy_url)
    try:
        sqlite = store.dialect == "sqlite"
        before = (_answers(store), _rows(store), _schema(store) if sqlite else None)
        statistics = _statistics(store) if sqlite else None
        downgrade(store, "0030")
        if sqlite:
            assert _declared_types(store) == {"CHAR(32)"}
            assert _stored_forms(store) == {("text", 32)}
        assert _rows(store) == before[1]
        upgrade(store)
        after = (_answers(store), _rows(store), _schema(store) if sqlite else None)
        assert after == before
        if sqlite:
            assert _stored_forms(store) == {("blob", 16)}
            assert _statistics(store) == statistics
            with store.read() as conn:
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
    finally:
        store.dispose()


def _statistics(store: Store) -> list[tuple[Any, ...]]:
    with store.read() as conn:
        return sorted(tuple(row) for row in conn.exec_driver_sql("SELECT * FROM sqlite_stat1"))


def test_a_migration_stopped_before_its_stamp_runs_again(migrated_copy_url: str) -> None:
    """On SQLite the tables are made again in a transaction of their own, committed before
    Alembic records the revision: a process stopped between the two leaves a store of bytes
    marked 0030, and the next start finds nothing left to convert."""
    store = Store(migrated_copy_url)
    try:
        ingest_documents(store, _events(), batch=True)
        before = (_answers(store), _rows(store))
        store.write(
            lambda conn: conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0030'")
        )
        upgrade(store)
        assert (_answers(store), _rows(store)) == before
        if store.dialect == "sqlite":
            assert _stored_forms(store) == {("blob", 16)}
    finally:
        store.dispose()
