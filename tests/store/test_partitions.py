"""Retention by whole months (design §5): runs' rows kept under the month the run was first
received in; on PostgreSQL a prune drops the months that hold only runs that go.

The history is written as the server's clock would have received it, in three months (the
partitions for them made first, as a server running then would have):

- August 2026: run AUG of `etl.load` (Aug 10, 10:00-11:00) writing `w.raw`, and a JobEvent
  declaring `etl.report` (reads `w.raw`, writes `w.report`);
- September 2026: run SEP of `etl.load` (Sep 10) reading `w.sep_in` and writing `w.raw`;
- October 2026: runs OCT_OLD (Oct 5) and OCT_NEW (Oct 25) of `etl.load` writing `w.raw`.

The cutoff is Oct 15: AUG, SEP and OCT_OLD go, 6 of the 9 events. August and September hold
only runs that go, so on PostgreSQL their partitions are dropped; October holds OCT_NEW, so
OCT_OLD's rows are deleted. What goes, by hand: 6 events, 3 runs, 4 reads and writes (each run
writes `w.raw`, SEP also reads `w.sep_in`), 3 dataset versions (one per writing run), SEP's one
inferred flow `w.sep_in` -> `w.raw`, and `w.sep_in`, which nothing else names. The declaration
and OCT_NEW keep `etl.load`, `w.raw`, `w.report` and the namespaces.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import ds, job_event, run_event
from tests.readback import stored_id
from upstream.cli import app as cli_app
from upstream.ingest.rebuild import rebuild
from upstream.ingest.service import prepare
from upstream.model import json_text
from upstream.retention import prune_store
from upstream.store import packed_facets, payloads
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.migrate import alembic_config, session_lock, upgrade
from upstream.store.months import KEEP, RUN_COLUMN
from upstream.store.partitions import make_partitions, month_partitions, partition_name
from upstream.store.writer import write_facts

AUG = "00000000-0000-4000-8000-00000000a008"
SEP = "00000000-0000-4000-8000-00000000a009"
OCT_OLD = "00000000-0000-4000-8000-00000000a010"
OCT_NEW = "00000000-0000-4000-8000-00000000a011"
CUTOFF = datetime(2026, 10, 15, tzinfo=UTC)
KEPT_WINDOW = {"start": CUTOFF.isoformat(), "end": "2026-11-30T00:00:00Z", "levels": 5}
LOAD = ("etl", "load")


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def run(run_id: str, start: datetime, **kw: Any) -> list[dict[str, Any]]:
    end = start + timedelta(hours=1)
    return [
        run_event(LOAD, run_id=run_id, event_type="START", time=start, **kw),
        run_event(LOAD, run_id=run_id, event_type="COMPLETE", time=end, **kw),
    ]


#: (when the server received them, the events).
HISTORY: list[tuple[datetime, list[dict[str, Any]]]] = [
    (
        at(8, 10, 12),
        [
            *run(AUG, at(8, 10, 10), outputs=[ds("w", "raw")]),
            job_event(("etl", "report"), inputs=[ds("w", "raw")], outputs=[ds("w", "report")]),
        ],
    ),
    (at(9, 10, 12), run(SEP, at(9, 10, 10), inputs=[ds("w", "sep_in")], outputs=[ds("w", "raw")])),
    (at(10, 5, 12), run(OCT_OLD, at(10, 5, 10), outputs=[ds("w", "raw")])),
    (at(10, 25, 12), run(OCT_NEW, at(10, 25, 10), outputs=[ds("w", "raw")])),
]


def write(store: Store, documents: list[dict[str, Any]], received: datetime) -> Any:
    facts = prepare(documents, batch=True)
    return store.write(lambda conn: write_facts(conn, facts, received))


@pytest.fixture
def history(store: Store) -> Store:
    store.write(lambda conn: make_partitions(conn, [202608, 202609, 202610]))
    for received, documents in HISTORY:
        write(store, documents, received)
    return store


def answers(client: TestClient) -> dict[str, str]:
    """What a user sees of the kept window, as the server's bytes."""
    return {
        "lineage": client.get("/v3/namespaces/w/datasets/raw/lineage", params=KEPT_WINDOW).text,
        "report": client.get("/v3/namespaces/w/datasets/report/lineage", params=KEPT_WINDOW).text,
        "run": client.get(f"/api/v1/jobs/runs/{OCT_NEW}").text,
        "dataset": client.get("/api/v1/namespaces/w/datasets/raw").text,
        "job": client.get("/api/v1/namespaces/etl/jobs/report").text,
    }


def months(store: Store, table: sa.Table) -> dict[int, int]:
    """How many rows of `table` each month holds."""
    with store.read() as conn:
        query = sa.select(table.c.month, sa.func.count()).group_by(table.c.month)
        return dict(conn.execute(query).all())


def test_rows_are_kept_under_their_runs_first_month(history: Store) -> None:
    # Each run's two events, the declaration's event under KEEP.
    assert months(history, t.events) == {KEEP: 1, 202608: 2, 202609: 2, 202610: 4}
    assert months(history, t.runs) == {202608: 1, 202609: 1, 202610: 2}
    assert months(history, t.relations) == {KEEP: 2, 202608: 1, 202609: 2, 202610: 2}
    assert months(history, t.flows) == {KEEP: 1, 202609: 1}


def test_a_prune_of_whole_months_drops_them_and_the_kept_window_answers_the_same(
    history: Store, client: TestClient
) -> None:
    before = answers(client)
    report = prune_store(history, CUTOFF)
    assert report is not None
    assert {k: n for k, n in report.removed.items() if n} == {
        "events": 6,
        "runs": 3,
        "relations": 4,
        "dataset_versions": 3,
        "flows": 1,
        "datasets": 1,
    }
    assert answers(client) == before
    assert months(history, t.events) == {KEEP: 1, 202610: 2}
    with history.read() as conn:
        left = {table: sorted(month_partitions(conn, table)) for table in RUN_COLUMN}
    if history.dialect == "postgresql":
        # August and September went whole, every table's; October stays, less OCT_OLD's rows.
        gone = {partition_name(table, m) for table in RUN_COLUMN for m in (202608, 202609)}
        assert set(report.dropped) == gone
        assert all(202608 not in m and 202609 not in m and 202610 in m for m in left.values())
    else:
        assert report.dropped == []


def test_a_dry_run_names_the_months_and_drops_nothing(history: Store) -> None:
    dry = prune_store(history, CUTOFF, dry_run=True)
    assert dry is not None
    assert months(history, t.events) == {KEEP: 1, 202608: 2, 202609: 2, 202610: 4}
    with history.read() as conn:
        kept = month_partitions(conn, "events")
    real = prune_store(history, CUTOFF)
    assert real is not None
    assert dry.removed == real.removed
    assert dry.dropped == real.dropped
    if history.dialect == "postgresql":
        assert {202608, 202609} <= set(kept)


def test_an_event_posted_again_in_a_later_month_is_still_a_duplicate(history: Store) -> None:
    again = write(history, HISTORY[0][1], at(10, 30))
    assert (again.stored, again.duplicates) == (0, 3)
    assert months(history, t.events) == {KEEP: 1, 202608: 2, 202609: 2, 202610: 4}


def test_kept_events_bring_a_pruned_month_back_on_rebuild(
    history: Store, client: TestClient
) -> None:
    whole = client.get(f"/api/v1/jobs/runs/{AUG}").text
    report = prune_store(history, CUTOFF, keep_events=True)
    assert report is not None
    assert client.get(f"/api/v1/jobs/runs/{AUG}").status_code == 404
    assert months(history, t.events)[202608] == 2
    rebuild(history)
    # The run is filed under its month again (in the default partition on PostgreSQL, its
    # month's partition of runs being gone) and answers as it did.
    assert client.get(f"/api/v1/jobs/runs/{AUG}").text == whole
    assert months(history, t.runs) == {202608: 1, 202609: 1, 202610: 2}


def test_a_month_without_a_partition_is_kept_and_pruned_by_rows(
    store: Store, client: TestClient
) -> None:
    """A write in a month no partition was made for lands in the default partition."""
    old = datetime(2020, 1, 10, tzinfo=UTC)
    write(store, run(AUG, old, outputs=[ds("w", "raw")]), old)
    assert months(store, t.events) == {202001: 2}
    report = prune_store(store, CUTOFF)
    assert report is not None
    assert (report.removed["events"], report.removed["runs"]) == (2, 1)
    assert partition_name("events", None) not in report.dropped
    assert months(store, t.events) == {}


def table_rows(
    store: Store, leave_out: frozenset[str] = frozenset()
) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables kept by month, without the month (and the columns
    `leave_out` names, alone or as `table.column`), in a stable order, each column by name.
    A version's fields and facets are read through its content (kept apart since 0023), an
    event's payload as the text it keeps (compressed since 0025), fields and facets as the
    canonical text of their document (compressed since 0026, before as `jsonb` on
    PostgreSQL, which orders keys its own way), ids as `stored_id` reads them (bytes on SQLite
    since 0031)."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    with store.read() as conn:
        for name in RUN_COLUMN:
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            columns = [
                c
                for c in table.columns
                if c.name not in {"month", *leave_out} and f"{name}.{c.name}" not in leave_out
            ]
            query = sa.select(*columns)
            if "content_id" in table.c:
                contents = sa.Table("version_contents", sa.MetaData(), autoload_with=conn)
                columns = [c for c in columns if c.name != "content_id"]
                query = sa.select(*columns, contents.c.fields, contents.c.facets).join_from(
                    table, contents, contents.c.id == table.c.content_id
                )
            found = [dict(row) for row in conn.execute(query).mappings()]
            if "payload_zstd" in table.c:
                # Compared as the text it keeps: a payload compressed again (after a
                # migration down and up) may be other bytes for the same text.
                texts = payloads.unpack(conn, [row.pop("payload_zstd") for row in found])
                for row, text in zip(found, texts, strict=True):
                    row["payload"] = text
            for row in found:
                for column in {"fields", "facets"} & row.keys():
                    row[column] = _document(conn, row[column])
            for row in found:
                row.update({c: stored_id(v) for c, v in row.items() if c.endswith("id")})
            rows[name] = sorted(
                tuple(sorted((k, repr(v)) for k, v in row.items())) for row in found
            )
    return rows


def _document(conn: sa.Connection, stored: Any) -> bytes:
    """The canonical text of a stored document: packed (bytes), parsed or JSON text."""
    if isinstance(stored, bytes):
        stored = packed_facets.unpack(conn, [stored])[0]
    elif isinstance(stored, str):
        stored = json_text.parse(stored)
    return json_text.canonical(stored)


def test_the_migration_keeps_every_row_and_files_it_by_month(
    history: Store, client: TestClient
) -> None:
    """Down to the last unpartitioned revision and up again: the same rows, the same months,
    the same answers, and on PostgreSQL the partitions for every month the rows name. The
    events' lists of the namespaces they name came later (0021, and those of their inputs and
    outputs 0025): down there the rows are compared without them, and up again the migrations
    have listed them as ingest did. A flow's key, run and span and a link's run went later
    (0030, `test_runs_kept_once`): down there they are back, and the rows are compared
    without them."""
    before = (table_rows(history), answers(client), months(history, t.events))
    rows_of_0006 = table_rows(history, leave_out=frozenset({"namespaces", "io_namespaces"}))
    copies = ("flows.id", "flows.run_id", "flows.started_at", "flows.ended_at")
    try:
        with session_lock(history, 0) as conn:
            command.downgrade(alembic_config(conn), "0006")
            conn.commit()
        with history.read() as conn:
            assert "month" not in {c["name"] for c in sa.inspect(conn).get_columns("runs")}
            assert "namespaces" not in {c["name"] for c in sa.inspect(conn).get_columns("events")}
        assert table_rows(history, frozenset({*copies, "lineage_links.run_id"})) == rows_of_0006
    finally:
        upgrade(history)  # the next tests of this worker's database need its schema whole
    assert (table_rows(history), answers(client), months(history, t.events)) == before
    if history.dialect == "postgresql":
        with history.read() as conn:
            assert {202608, 202609, 202610} <= set(month_partitions(conn, "runs"))
            assert conn.execute(sa.text("SELECT count(*) FROM events_202609")).scalar() == 2


def test_db_prune_says_which_months_went_whole(history: Store, db_url: str) -> None:
    args = ["db", "prune", "--before", CUTOFF.isoformat(), "--db", db_url]
    dry = CliRunner().invoke(cli_app, [*args, "--dry-run"])
    done = CliRunner().invoke(cli_app, args)
    assert dry.exit_code == done.exit_code == 0, dry.output + done.output
    assert "6 raw events" in dry.output
    assert "6 raw events" in done.output
    if history.dialect == "postgresql":
        assert "would drop the months 2026-08, 2026-09 whole (14 partitions)" in dry.output
        assert "dropped the months 2026-08, 2026-09 whole (14 partitions)" in done.output
    else:
        assert "whole" not in dry.output + done.output
