"""A run's flows and lineage links name their run once, as their owner (migration 0030): the
readers take a row's run from its owner when its scope is "run", and a run's flow its span
from the run's row; a declaration's rows have neither. A flow has no key of its own: an
owner's flows are replaced together."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import command

from tests.builders import BASE_TIME, column_lineage, ds, hours, job_event, run_event
from tests.readback import edge_rows
from upstream.ingest.service import ingest_documents
from upstream.store import graph_rows
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade

#: What a flow no longer stores but its owner: its run and the run's span.
COPIES = ("run_id", "started_at", "ended_at")

RUN = "0b0e7d1c-5c1b-4f51-9d1e-2f3c4d5e6f70"
#: The run's START and COMPLETE, as the graph index holds instants (microseconds since 1970).
STARTED, ENDED = (
    int(moment.timestamp()) * 1_000_000 for moment in (BASE_TIME, BASE_TIME + hours(2))
)


def _events() -> list[dict[str, Any]]:
    """A run of jobs/a (raw -> mid, with a field edge), started and completed, and jobs/b's
    declaration (mid -> out, with a field edge)."""
    return [
        run_event(("jobs", "a"), run_id=RUN, event_type="START"),
        run_event(
            ("jobs", "a"),
            run_id=RUN,
            time=BASE_TIME + hours(2),
            inputs=[ds("lake", "raw")],
            outputs=[
                ds("lake", "mid", columnLineage=column_lineage({"id": [("lake", "raw", "id")]}))
            ],
        ),
        job_event(
            ("jobs", "b"),
            inputs=[ds("lake", "mid")],
            outputs=[
                ds("lake", "out", columnLineage=column_lineage({"id": [("lake", "mid", "id")]}))
            ],
        ),
    ]


def _graph(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """What the graph index loads of the flows and the links: whether a row is a run's, its
    run, and a flow's span."""
    with store.read() as conn:
        flows = [row for rows in graph_rows.flow_rows(conn) for row in rows]
        links = [row for rows in graph_rows.field_link_rows(conn) for row in rows]
    return {
        # (owner, source, target, job, run, inferred, started, ended, …)
        "flows": sorted(((row[0] == row[4]), row[4], row[6], row[7]) for row in flows),
        # (owner, set, run, of a run, …)
        "links": sorted((row[3], row[2]) for row in links),
    }


def _runs_by_scope(store: Store) -> list[tuple[str, str | None]]:
    """Each edge's scope and run, as every reader of edges sees them."""
    return sorted(
        (row["scope"], str(row["run_id"]) if row["run_id"] else None) for row in edge_rows(store)
    )


def test_a_runs_rows_have_their_run_and_a_declarations_none(store: Store) -> None:
    ingest_documents(store, _events(), batch=True)
    # The run's flow raw -> mid, the declaration's mid -> out (current, and in its history);
    # the run's link, the job's.
    assert _graph(store) == {
        "flows": [
            (False, None, None, None),
            (False, None, None, None),
            (True, RUN, STARTED, ENDED),
        ],
        "links": [(False, None), (True, RUN)],
    }
    assert _runs_by_scope(store) == [("job", None), ("job", None), ("run", RUN), ("run", RUN)]


def _columns(store: Store) -> dict[str, set[str]]:
    with store.read() as conn:
        inspector = sa.inspect(conn)
        return {
            table: {str(c["name"]) for c in inspector.get_columns(table)}
            for table in ("flows", "declared_flows", "lineage_links")
        }


def _stored_runs(store: Store, table: str) -> list[tuple[str, bool]]:
    """Each row's scope, and whether its `run_id` is its owner (else NULL)."""
    with store.read() as conn:
        rows = conn.execute(sa.text(f"SELECT scope, owner_id, run_id FROM {table}")).all()
    assert all(run is None or run == owner for _, owner, run in rows)
    return sorted((scope, run is not None) for scope, _, run in rows)


def _stored_spans(store: Store) -> list[tuple[str, Any, Any]]:
    """Each flow's scope and span as stored (its run's again, at 0029)."""
    with store.read() as conn:
        rows = conn.execute(sa.text("SELECT scope, started_at, ended_at FROM flows")).all()
    return sorted(
        (str(scope), *(str(m)[:19] if m else None for m in span)) for scope, *span in rows
    )


def test_the_migration_keeps_every_row_with_its_run(migrated_copy_url: str) -> None:
    """Down to 0029 the flows and links hold their run again, and the flows an id; up
    again they go, and the graph index loads the same rows."""
    store = Store(migrated_copy_url)
    try:
        ingest_documents(store, _events(), batch=True)
        before, edges = _graph(store), _runs_by_scope(store)
        with session_lock(store, 0) as conn:
            command.downgrade(alembic_config(conn), "0029")
            conn.commit()
        columns = _columns(store)
        assert {"id", *COPIES} <= columns["flows"] & columns["declared_flows"]
        assert "run_id" in columns["lineage_links"]
        assert _stored_runs(store, "flows") == [("job", False), ("run", True)]
        assert _stored_spans(store) == [
            ("job", None, None),
            ("run", "2026-11-01 12:00:00", "2026-11-01 14:00:00"),
        ]
        assert _stored_runs(store, "lineage_links") == [("job", False), ("run", True)]
        with store.read() as conn:
            ids = conn.execute(sa.text("SELECT id FROM flows")).scalars().all()
        assert len(set(ids)) == len(ids) == 2
        upgrade(store)
        columns = _columns(store)
        assert not {"id", *COPIES} & (columns["flows"] | columns["declared_flows"])
        assert "run_id" not in columns["lineage_links"]
        assert (_graph(store), _runs_by_scope(store)) == (before, edges)
    finally:
        store.dispose()
