"""A lineage set edge's transformations are kept once per distinct value
(`edge_transformations`, migration 0029): every run of a job states the same few, so each
edge holds an id, and reads back exactly the value it stated."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import command

from tests.builders import PRODUCER, ds, run_event
from tests.readback import edge_rows
from upstream.ingest.service import ingest_documents
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

IDENTITY = [{"type": "DIRECT", "subtype": "IDENTITY"}]
SUM = [{"type": "DIRECT", "subtype": "AGGREGATION", "description": "sum", "masking": False}]
#: SUM masked: another value, kept apart.
MASKED_SUM = [{**SUM[0], "masking": True}]


def _lineage(fields: dict[str, tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """A columnLineage facet: output field -> (input field of lake/raw, its transformations)."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
        "fields": {
            out: {
                "inputFields": [
                    {"namespace": "lake", "name": "raw", "field": field, "transformations": tr}
                ]
            }
            for out, (field, tr) in fields.items()
        },
    }


def _events() -> list[dict[str, Any]]:
    """Two jobs, five field edges, three distinct transformations (and the dataset edges'
    empty list)."""
    first = _lineage({"id": ("id", IDENTITY), "name": ("name", IDENTITY), "total": ("n", SUM)})
    second = _lineage({"id": ("id", IDENTITY), "total": ("n", MASKED_SUM)})
    return [
        run_event(
            ("jobs", "a"),
            inputs=[ds("lake", "raw")],
            outputs=[ds("lake", "a", columnLineage=first)],
        ),
        run_event(
            ("jobs", "b"),
            inputs=[ds("lake", "raw")],
            outputs=[ds("lake", "b", columnLineage=second)],
        ),
    ]


def _field_edges(store: Store) -> list[tuple[str | None, str | None, Any]]:
    """Each field edge's ends and its transformations, as read back."""
    rows = [row for row in edge_rows(store) if row["target_field"] is not None]
    return sorted(
        ((row["source_field"], row["target_field"], row["transformations"]) for row in rows),
        key=repr,
    )


def _kept(store: Store) -> list[Any]:
    with store.read() as conn:
        values = conn.execute(sa.select(t.edge_transformations.c.transformations)).scalars()
        return sorted(values, key=repr)


def test_each_distinct_value_is_stored_once_and_read_back_as_stated(store: Store) -> None:
    ingest_documents(store, _events(), batch=True)
    assert _field_edges(store) == sorted(
        [
            ("id", "id", IDENTITY),
            ("name", "name", IDENTITY),
            ("n", "total", SUM),
            ("id", "id", IDENTITY),
            ("n", "total", MASKED_SUM),
        ],
        key=repr,
    )
    assert _kept(store) == sorted([[], IDENTITY, SUM, MASKED_SUM], key=repr)


def test_a_value_stored_again_by_another_write_is_not_kept_twice(store: Store) -> None:
    first, second = _events()
    ingest_documents(store, [first], batch=True)
    ingest_documents(store, [second], batch=True)
    assert _kept(store) == sorted([[], IDENTITY, SUM, MASKED_SUM], key=repr)


def test_the_migration_keeps_every_edge_with_its_transformations(migrated_copy_url: str) -> None:
    """Down to 0028 each edge holds its transformations again; up again they are kept once,
    and every edge reads back the same."""
    store = Store(migrated_copy_url)
    try:
        ingest_documents(store, _events(), batch=True)
        before = _field_edges(store)
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0028")
            conn.commit()
        with store.read() as conn:
            assert not sa.inspect(conn).has_table("edge_transformations")
            held = conn.execute(sa.text("SELECT count(*) FROM lineage_set_edges")).scalar_one()
            stated = conn.execute(
                sa.text("SELECT count(*) FROM lineage_set_edges WHERE transformations IS NOT NULL")
            ).scalar_one()
        assert held == stated > 0
        upgrade(store)
        assert _field_edges(store) == before
        with store.read() as conn:
            kept = conn.execute(sa.select(sa.func.count()).select_from(t.edge_transformations))
            assert kept.scalar_one() == 4
    finally:
        store.dispose()
