"""The lineage links carry no index by run (migration 0028): a run's link is owned by the run,
so every read of a run's links asks by owner, and an index by run was written at every write
and read by nothing. The migration drops it from a store and keeps every link."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from tests.builders import column_lineage, ds, run_event
from tests.query.test_derived_graph import second_db_url
from tests.readback import edges
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

__all__ = ["second_db_url"]

KEPT = {"ix_lineage_links_owner_id", "ix_lineage_links_job_id", "ix_lineage_links_set_id"}


def _link_indexes(store: Store) -> set[str]:
    with store.read() as conn:
        return {str(index["name"]) for index in sa.inspect(conn).get_indexes("lineage_links")}


def test_a_new_store_keeps_links_with_no_index_by_run(store: Store) -> None:
    assert _link_indexes(store) == KEPT


def test_the_migration_drops_the_index_and_keeps_every_link(second_db_url: str) -> None:
    """Down to 0027 the index is back; up again it goes, and the edges read back through
    the links are the ones stored before."""
    store = Store(second_db_url)
    try:
        upgrade(store)
        lineage = column_lineage({"id": [("lake", "raw", "id")]})
        ingest_documents(
            store,
            [
                run_event(
                    ("jobs", "a"),
                    inputs=[ds("lake", "raw")],
                    outputs=[ds("lake", "mid", columnLineage=lineage)],
                )
            ],
            batch=True,
        )
        before = edges(store)
        assert before == {("lake/raw#id", "lake/mid#id")}
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0027")
            conn.commit()
        assert _link_indexes(store) == {*KEPT, "ix_lineage_links_run_id"}
        assert edges(store) == before
        upgrade(store)
        assert _link_indexes(store) == KEPT
        assert edges(store) == before
    finally:
        store.dispose()
