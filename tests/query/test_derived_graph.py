"""The flow graph derived at write time (design §6) on both stores: every order of a run's
events gives the same flows, a declaration's flows follow its latest version, a rebuild from
the kept events gives the same answers, and so does a database of revision 0001 migrated and
rebuilt; every lifecycle state of a relation is kept."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_event,
    dataset_input,
    ds,
    hours,
    job_event,
    lineage_facet,
    run_event,
)
from tests.conftest import (
    create_database,
    drop_database,
    end_other_connections,
    post,
    truncate_tables,
)
from upstream.api.app import create_app
from upstream.ingest import rebuild as rebuild_module
from upstream.ingest.documents import event_record
from upstream.ingest.rebuild import needs_rebuild, rebuild
from upstream.ingest.service import ingest_documents
from upstream.model.events import parse_event
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.flow_writer import DERIVED_VERSION
from upstream.store.migrate import current_revision, head_revision, upgrade
from upstream.store.state import read_state, write_state

NS = "warehouse"
WINDOW = {"start": (BASE_TIME - hours(48)).isoformat(), "end": (BASE_TIME + hours(48)).isoformat()}


def flow_rows(store: Store) -> set[tuple[Any, ...]]:
    """The flows table by names: (scope, source, target, job, run, inferred, start, end)."""
    with store.read() as conn:
        names = {r.id: r.name for r in conn.execute(sa.select(t.datasets.c.id, t.datasets.c.name))}
        jobs = {r.id: r.name for r in conn.execute(sa.select(t.jobs.c.id, t.jobs.c.name))}
        run = t.owned_run(t.flows).label("run_id")
        spans = (t.runs.c.started_at, t.runs.c.ended_at)
        query = sa.select(t.flows, run, *spans).select_from(t.flows_with_runs())
        rows = conn.execute(query).mappings().all()
    return {
        (
            r["scope"],
            names[r["source_dataset_id"]],
            names[r["target_dataset_id"]],
            jobs.get(r["job_id"]),
            str(r["run_id"]) if r["run_id"] else None,
            r["inferred"],
            _utc(r["started_at"]),
            _utc(r["ended_at"]),
        )
        for r in rows
    }


def _utc(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


# -- every order of a run's events ----------------------------------------------------------


def three_events(run_id: str) -> list[dict[str, Any]]:
    """START lists the inputs a and b; RUNNING adds output x with columnLineage from b;
    COMPLETE adds output y (no lineage facet: y gets the product a, b -> y)."""
    job = (NS, "load")
    return [
        run_event(
            job,
            run_id=run_id,
            event_type="START",
            time=BASE_TIME,
            inputs=[ds(NS, "a"), ds(NS, "b")],
        ),
        run_event(
            job,
            run_id=run_id,
            event_type="RUNNING",
            time=BASE_TIME + hours(1),
            outputs=[ds(NS, "x", columnLineage=column_lineage({"id": [(NS, "b", "id")]}))],
        ),
        run_event(
            job,
            run_id=run_id,
            event_type="COMPLETE",
            time=BASE_TIME + hours(2),
            outputs=[ds(NS, "y")],
        ),
    ]


def expected_flows(run_id: str) -> set[tuple[Any, ...]]:
    span = (BASE_TIME.isoformat(), (BASE_TIME + hours(2)).isoformat())
    return {
        ("run", "b", "x", "load", run_id, False, *span),
        ("run", "a", "y", "load", run_id, True, *span),
        ("run", "b", "y", "load", run_id, True, *span),
    }


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_every_order_of_a_runs_events_gives_the_same_flows(
    client: TestClient, store: Store, order: tuple[int, ...]
) -> None:
    run_id = "14141414-1414-4141-8141-141414141414"
    events = three_events(run_id)
    for index in order:
        post(client, events[index])
        # Each step has the flows of what arrived so far, never a stale product.
        assert all(row[4] == run_id for row in flow_rows(store))
    assert flow_rows(store) == expected_flows(run_id)


def test_a_batch_holding_the_whole_run_gives_the_same_flows(
    client: TestClient, store: Store
) -> None:
    run_id = "15151515-1515-4151-8151-151515151515"
    response = client.post("/api/v1/lineage", json=list(reversed(three_events(run_id))))
    assert response.status_code == 201, response.text
    assert flow_rows(store) == expected_flows(run_id)


def test_a_lineage_facet_arriving_last_removes_the_product(
    client: TestClient, store: Store
) -> None:
    run_id = "16161616-1616-4161-8161-161616161616"
    job = (NS, "split")
    post(
        client,
        run_event(
            job,
            run_id=run_id,
            event_type="START",
            inputs=[ds(NS, "a"), ds(NS, "b")],
            outputs=[ds(NS, "x"), ds(NS, "y")],
        ),
    )
    assert {(r[1], r[2]) for r in flow_rows(store)} == {
        ("a", "x"),
        ("a", "y"),
        ("b", "x"),
        ("b", "y"),
    }
    facet = lineage_facet(
        dataset_entry(NS, "x", inputs=[dataset_input(NS, "a")]),
        dataset_entry(NS, "y", inputs=[dataset_input(NS, "b")]),
    )
    post(client, run_event(job, run_id=run_id, job_facets=facet))
    assert {(r[1], r[2], r[5]) for r in flow_rows(store)} == {("a", "x", False), ("b", "y", False)}


def test_a_jobs_latest_declaration_replaces_its_flows(client: TestClient, store: Store) -> None:
    job = (NS, "declared")
    post(client, job_event(job, time=BASE_TIME, inputs=[ds(NS, "a")], outputs=[ds(NS, "x")]))
    assert flow_rows(store) == {("job", "a", "x", "declared", None, True, None, None)}
    post(
        client,
        job_event(job, time=BASE_TIME + hours(1), inputs=[ds(NS, "b")], outputs=[ds(NS, "x")]),
    )
    # An older declaration arriving late changes nothing.
    post(
        client,
        job_event(job, time=BASE_TIME - hours(1), inputs=[ds(NS, "c")], outputs=[ds(NS, "x")]),
    )
    assert flow_rows(store) == {("job", "b", "x", "declared", None, True, None, None)}


def test_a_datasets_declared_lineage_is_a_flow_without_a_job(
    client: TestClient, store: Store
) -> None:
    facet = {
        "lineage": {
            "_producer": "p",
            "_schemaURL": "s",
            "inputs": [{"type": "DATASET", "namespace": NS, "name": "a"}],
        }
    }
    post(client, dataset_event(NS, "x", **facet))
    assert flow_rows(store) == {("dataset", "a", "x", None, None, False, None, None)}


# -- lifecycle states -----------------------------------------------------------------------


def test_every_lifecycle_state_of_a_relation_is_kept(client: TestClient, store: Store) -> None:
    run_id = "17171717-1717-4171-8171-171717171717"
    job = (NS, "scratch")
    created = ds(NS, "tmp", lifecycleStateChange={"lifecycleStateChange": "CREATE"})
    dropped = ds(NS, "tmp", lifecycleStateChange={"lifecycleStateChange": "DROP"})
    post(
        client,
        run_event(
            job, run_id=run_id, event_type="COMPLETE", time=BASE_TIME + hours(1), outputs=[dropped]
        ),
        run_event(job, run_id=run_id, event_type="START", time=BASE_TIME, outputs=[created]),
        run_event(
            job,
            run_id=run_id,
            event_type="COMPLETE",
            time=BASE_TIME + hours(1),
            outputs=[dropped],
            run_facets={"note": {"_producer": "p", "_schemaURL": "s"}},
        ),
    )
    with store.read() as conn:
        kept = conn.execute(
            sa.select(t.relations.c.lifecycles).where(t.relations.c.access == "write")
        ).scalar_one()
    assert kept == ["CREATE", "DROP"]


# -- rebuild and migration ------------------------------------------------------------------


def story() -> list[dict[str, Any]]:
    """Runs with inputs x outputs, columnLineage, a lineage facet, a workflow with a
    temporary dataset, a job's declaration and a dataset's declared lineage."""
    wf = (NS, "nightly")
    wf_run = "20202020-2020-4202-8202-202020202020"
    return [
        run_event(wf, run_id=wf_run, event_type="START", time=BASE_TIME),
        run_event(
            (NS, "extract"),
            run_id="21212121-2121-4212-8212-212121212121",
            time=BASE_TIME + hours(1),
            inputs=[ds(NS, "src")],
            outputs=[ds(NS, "stage", lifecycleStateChange={"lifecycleStateChange": "CREATE"})],
            parent=(wf, wf_run),
        ),
        run_event(
            (NS, "transform"),
            run_id="22222222-2222-4222-8222-222222222222",
            time=BASE_TIME + hours(2),
            inputs=[ds(NS, "stage"), ds(NS, "dim")],
            outputs=[
                ds(
                    NS,
                    "mart",
                    columnLineage=column_lineage(
                        {"id": [(NS, "stage", "id")], "name": [(NS, "dim", "name")]}
                    ),
                )
            ],
            parent=(wf, wf_run),
        ),
        run_event(
            (NS, "cleanup"),
            run_id="23232323-2323-4232-8232-232323232323",
            time=BASE_TIME + hours(3),
            outputs=[ds(NS, "stage", lifecycleStateChange={"lifecycleStateChange": "DROP"})],
            parent=(wf, wf_run),
        ),
        run_event(wf, run_id=wf_run, time=BASE_TIME + hours(4)),
        run_event(
            (NS, "report"),
            run_id="24242424-2424-4242-8242-242424242424",
            time=BASE_TIME + hours(5),
            inputs=[ds(NS, "mart"), ds(NS, "other")],
            outputs=[ds(NS, "deck"), ds(NS, "mail")],
            job_facets=lineage_facet(dataset_entry(NS, "deck", inputs=[dataset_input(NS, "mart")])),
        ),
        job_event(
            (NS, "planned"), time=BASE_TIME, inputs=[ds(NS, "deck")], outputs=[ds(NS, "board")]
        ),
        dataset_event(
            NS,
            "board",
            lineage={
                "_producer": "p",
                "_schemaURL": "s",
                "inputs": [{"type": "DATASET", "namespace": NS, "name": "mail"}],
            },
        ),
    ]


def answers(client: TestClient) -> dict[str, Any]:
    """What users see: every dataset's lineage both ways (and rolled up), field lineage of
    the mart, the whole graph; ingestion times left out."""
    found: dict[str, Any] = {}
    for name in ("src", "stage", "dim", "mart", "other", "deck", "mail", "board"):
        base = f"/v3/namespaces/{NS}/datasets/{name}/lineage"
        for params in (
            {},
            {"direction": "upstream"},
            {"direction": "downstream"},
            {"rollup": "workflow"},
            {"direction": "upstream", "rollup": "workflow"},
        ):
            response = client.get(base, params={**WINDOW, **params, "levels": 5})
            assert response.status_code == 200, response.text
            found[f"{name} {params}"] = response.json()
    summary = client.get(
        f"/v3/namespaces/{NS}/datasets/mart/lineage/fields/id",
        params={**WINDOW, "direction": "both", "levels": 3},
    )
    found["mart.id"] = summary.json()
    found["graph"] = client.get("/v3/lineage/graph").json()
    return found


def test_a_rebuild_from_the_kept_events_gives_the_same_answers(
    client: TestClient, store: Store
) -> None:
    post(client, *story())
    before, flows_before = answers(client), flow_rows(store)
    report = rebuild(store)
    assert report.events == len(story())
    assert report.refused == ()
    assert not needs_rebuild(store)
    assert flow_rows(store) == flows_before
    assert answers(client) == before


@pytest.fixture
def second_db_url(db_url: str, tmp_path: Path) -> Iterator[str]:
    """Another empty database of the same kind, without any schema."""
    if db_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    name = f"{sa.make_url(db_url).database}_old"
    yield create_database(name)
    drop_database(name)


#: The events table as revision 0001 made it: the payload kept as text, the run's id as
#: SQLAlchemy's `Uuid` (32 hex digits on SQLite until 0031).
EVENTS_0001 = sa.table(
    "events",
    sa.column("payload", sa.Text()),
    *(
        sa.column(c.name, sa.Uuid() if c.type is t.Id else c.type)
        for c in t.events.columns
        if c.name not in ("payload_zstd", "month", "namespaces", "io_namespaces")
    ),
)


def test_a_database_of_revision_0001_migrates_to_the_same_answers(
    client: TestClient, second_db_url: str
) -> None:
    """An old database holds its events (and lineage derived by the old rules, which the
    migration clears); upgraded and rebuilt on start, it answers as a fresh ingest does."""
    post(client, *story())
    fresh = answers(client)
    old = Store(second_db_url)
    try:
        upgrade(old, "0001")
        received = datetime(2026, 11, 30, tzinfo=UTC)
        with old.engine.begin() as conn:
            for seq, document in enumerate(story(), start=1):
                record = event_record(parse_event(document), document)
                conn.execute(
                    EVENTS_0001.insert().values(
                        seq=seq,
                        event_key=record.key,
                        event_type=record.event_type,
                        event_kind=record.event_kind,
                        event_time=record.event_time,
                        received_at=received,
                        run_id=record.run_id,
                        payload=record.payload,
                        job_namespace=record.job.namespace if record.job else None,
                        job_name=record.job.name if record.job else None,
                        dataset_namespace=record.dataset.namespace if record.dataset else None,
                        dataset_name=record.dataset.name if record.dataset else None,
                    )
                )
        with TestClient(create_app(Settings(db_url=second_db_url))) as migrated:
            assert current_revision(old) == head_revision()
            with old.read() as conn:
                assert read_state(conn)["derived_version"] == DERIVED_VERSION
            assert answers(migrated) == fresh
    finally:
        old.dispose()


def test_the_migrated_schema_is_the_schema_the_code_declares(db_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from upstream.store.partitions import not_a_partition

    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        opts = {"compare_type": True, "include_name": not_a_partition}
        context = MigrationContext.configure(conn, opts=opts)
        differences = compare_metadata(context, t.metadata)
    engine.dispose()
    if db_url.startswith("sqlite"):
        differences = _without_deferrable_keys(differences)
    assert differences == []


def _without_deferrable_keys(differences: list[Any]) -> list[Any]:
    """`differences` but the foreign keys declared deferrable (checked at the end of a write
    on PostgreSQL): SQLAlchemy reflects no key options from SQLite, so each looks removed and
    added again there; SQLite defers every key of a write itself (`PRAGMA defer_foreign_keys`)."""

    def ends(key: sa.ForeignKeyConstraint) -> tuple[Any, ...]:
        return (key.table.name, tuple(key.column_keys), key.referred_table.name)

    deferrable = {ends(d[1]) for d in differences if d[0] == "add_fk" and d[1].deferrable}
    return [
        d for d in differences if not (d[0] in ("add_fk", "remove_fk") and ends(d[1]) in deferrable)
    ]


def test_events_stay_json_the_rebuild_reads() -> None:
    """The kept payload is the event's JSON text; the rebuild reads it back with json."""
    document = run_event((NS, "j"), run_id=str(uuid.uuid4()), inputs=[ds(NS, "a")])
    record = event_record(parse_event(document), document)
    assert json.loads(record.payload) == document


class Interrupted(Exception):
    pass


def test_an_interrupted_rebuild_continues_where_it_stopped(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    post(client, *story())  # one post per event, each received at its own time
    before = answers(client)
    monkeypatch.setattr(rebuild_module, "BATCH_EVENTS", 3)  # three events per transaction

    def stop_after_three(done: int, total: int) -> None:
        if done >= 3:
            raise Interrupted

    with pytest.raises(Interrupted):
        rebuild(store, stop_after_three)
    assert needs_rebuild(store)
    with store.read() as conn:
        assert read_state(conn)["rebuild_seq"] == "3"
    seen: list[tuple[int, int]] = []
    report = rebuild(store, lambda done, total: seen.append((done, total)))
    assert report.events == len(story()) - 3
    assert seen[0] == (3, len(story()))
    assert seen[-1] == (len(story()), len(story()))
    assert not needs_rebuild(store)
    assert answers(client) == before


@pytest.mark.postgres
def test_a_rebuild_whose_connections_are_cut_finishes_with_the_same_answers(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session holding the rebuild's lock dies mid-way (the lock goes with it): the
    pooled connections are replaced, the rebuild finishes, and ending it reports no failure
    of the dead session (it printed `PendingRollbackError`)."""
    truncate_tables(postgres_server)
    store = Store(postgres_server)
    try:
        with TestClient(create_app(Settings(db_url=postgres_server), migrate=False)) as client:
            post(client, *story())
            before = answers(client)
            monkeypatch.setattr(rebuild_module, "BATCH_EVENTS", 3)
            cuts: list[int] = []

            def cut_once(done: int, total: int) -> None:
                if done >= 3 and not cuts:
                    cuts.append(done)
                    end_other_connections(postgres_server)

            report = rebuild(store, cut_once)
            assert (cuts, report.events) == ([3], len(story()))
            assert not needs_rebuild(store)
            assert answers(client) == before
    finally:
        store.dispose()


def test_the_rebuild_command(client: TestClient, db_url: str, store: Store) -> None:
    from typer.testing import CliRunner

    from upstream.cli import app as cli_app

    post(client, *story())
    before = flow_rows(store)
    result = CliRunner().invoke(cli_app, ["db", "rebuild", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert f"replayed {len(story())} events" in result.output
    assert flow_rows(store) == before


def test_a_database_filled_after_its_migration_is_not_derived_again(second_db_url: str) -> None:
    """`upstream db upgrade`, then `upstream ingest --db`, then `upstream serve`: the events
    were derived by the running rules as they were written, so the start rebuilds nothing."""
    store = Store(second_db_url)
    try:
        upgrade(store)
        assert not needs_rebuild(store)
        ingest_documents(store, story(), batch=True)
        upgrade(store)  # as every start does
        assert not needs_rebuild(store)
        with store.read() as conn:
            assert read_state(conn) == {"derived_version": DERIVED_VERSION}
    finally:
        store.dispose()


def test_a_store_with_events_of_unknown_rules_is_not_stamped(second_db_url: str) -> None:
    """Only an empty store is taken as built by the running rules: one holding events whose
    derivation is not recorded is rebuilt."""
    store = Store(second_db_url)
    try:
        upgrade(store)
        ingest_documents(store, story(), batch=True)
        store.write(lambda conn: write_state(conn, derived_version=None))
        upgrade(store)
        assert needs_rebuild(store)
        assert rebuild(store).events == len(story())
        assert not needs_rebuild(store)
    finally:
        store.dispose()


def test_two_processes_take_turns_to_rebuild(store: Store) -> None:
    """The rebuild's lock is held across its transactions, on SQLite too (its own database
    lock covers one transaction): a second holder waits until the first lets go."""
    import threading

    from upstream.store.migrate import session_lock

    other = Store(store.url.render_as_string(hide_password=False))
    held, entered, release = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with session_lock(store, 0x55505342):
            held.set()
            release.wait(10)

    def second() -> None:
        held.wait(10)
        with session_lock(other, 0x55505342):
            entered.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    try:
        for thread in threads:
            thread.start()
        assert held.wait(10)
        assert not entered.wait(0.5), "the second holder did not wait for the first"
        release.set()
        assert entered.wait(10)
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
        other.dispose()
