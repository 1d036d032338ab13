"""No index that no read uses (migration 0028): the lineage links carry none by run (a run's
link is owned by the run, and every read of a run's links asks by owner) nor by job, and the
runs none by parent (the graph index reads every run's parent whole). Each was written at
every write and read by nothing. The migration drops them from a store and keeps every row."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from tests.builders import column_lineage, ds, run_event
from tests.readback import stored_id
from upstream.ingest.service import ingest_documents
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

KEPT = {
    "lineage_links": {"ix_lineage_links_owner_id", "ix_lineage_links_set_id"},
    "runs": {"ix_runs_job_id", "ix_runs_window"},
}
DROPPED = {
    "lineage_links": {"ix_lineage_links_run_id", "ix_lineage_links_job_id"},
    "runs": {"ix_runs_parent_run_id"},
}


def _rows(store: Store) -> dict[str, list[tuple[object, ...]]]:
    """The rows as stored (the columns the tables have now), ids as `stored_id` reads them
    at any revision."""
    rows: dict[str, list[tuple[object, ...]]] = {}
    with store.read() as conn:
        for table in (t.lineage_links, t.runs):
            stored = sa.Table(table.name, sa.MetaData(), autoload_with=conn)
            query = sa.select(*(stored.c[column.name] for column in table.c))
            rows[table.name] = sorted(tuple(map(stored_id, row)) for row in conn.execute(query))
    return rows


def _indexes(store: Store) -> dict[str, set[str]]:
    with store.read() as conn:
        inspector = sa.inspect(conn)
        return {
            table: {str(index["name"]) for index in inspector.get_indexes(table)} for table in KEPT
        }


def test_a_new_store_keeps_links_and_runs_with_only_the_indexes_read(store: Store) -> None:
    assert _indexes(store) == KEPT


def test_the_migration_drops_the_indexes_and_keeps_every_row(migrated_copy_url: str) -> None:
    """Down to 0027 the indexes are back; up again they go, and the links and runs are the
    ones stored before."""
    store = Store(migrated_copy_url)
    try:
        lineage = column_lineage({"id": [("lake", "raw", "id")]})
        workflow = ("jobs", "flow"), "0b0e7d1c-5c1b-4f51-9d1e-2f3c4d5e6f70"
        ingest_documents(
            store,
            [
                run_event(
                    ("jobs", "a"),
                    inputs=[ds("lake", "raw")],
                    outputs=[ds("lake", "mid", columnLineage=lineage)],
                    parent=workflow,
                )
            ],
            batch=True,
        )
        before = _rows(store)
        assert (len(before["lineage_links"]), len(before["runs"])) == (1, 2)
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0027")
            conn.commit()
        assert _indexes(store) == {table: KEPT[table] | DROPPED[table] for table in KEPT}
        assert _rows(store) == before
        upgrade(store)
        assert _indexes(store) == KEPT
        assert _rows(store) == before
    finally:
        store.dispose()
