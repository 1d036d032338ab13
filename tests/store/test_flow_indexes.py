"""The stored flows carry no index by dataset (migration 0027): walks load flows by run or
owner into the graph index, so an index by source or target was written at every write and
read by no answer. The migration drops them from a store and keeps every flow."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from tests.builders import ds, run_event
from tests.readback import dataset_flows, stored_dataset_flows
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

DROPPED = {"ix_flows_source", "ix_flows_target"}


def _flow_indexes(store: Store) -> set[str]:
    with store.read() as conn:
        return {str(index["name"]) for index in sa.inspect(conn).get_indexes("flows")}


def test_a_new_store_keeps_flows_with_no_index_by_dataset(store: Store) -> None:
    assert _flow_indexes(store) == {"ix_flows_owner_id"}


def test_the_migration_drops_the_indexes_and_keeps_every_flow(migrated_copy_url: str) -> None:
    """Down to 0026 the two indexes are back; up again they go, and the flows read back by
    dataset are the ones stored before."""
    store = Store(migrated_copy_url)
    try:
        ingest_documents(
            store,
            [
                run_event(("jobs", "a"), inputs=[ds("lake", "raw")], outputs=[ds("lake", "mid")]),
                run_event(("jobs", "b"), inputs=[ds("lake", "mid")], outputs=[ds("lake", "out")]),
            ],
            batch=True,
        )
        before = dataset_flows(store)
        assert before == {("lake/raw", "lake/mid"), ("lake/mid", "lake/out")}
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0026")
            conn.commit()
        assert _flow_indexes(store) == {"ix_flows_owner_id", *DROPPED}
        assert stored_dataset_flows(store) == before
        upgrade(store)
        assert _flow_indexes(store) == {"ix_flows_owner_id"}
        assert dataset_flows(store) == before
    finally:
        store.dispose()
