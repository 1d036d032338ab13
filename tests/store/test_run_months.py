"""The month each run is filed under (`upstream.store.months.run_months`): decided once, by
the first write that names the run, even when two writers name a new run at once."""

from __future__ import annotations

import threading
import time
import uuid

from sqlalchemy.engine import Connection

from upstream.store.engine import Store
from upstream.store.months import run_months

A, B = (uuid.UUID(int=n) for n in (1, 2))


def test_a_run_keeps_the_month_of_the_first_write_that_named_it(
    statements: tuple[Store, list[str]],
) -> None:
    store, sent = statements
    assert store.write(lambda conn: run_months(conn, {A: 202601})) == {A: 202601}
    sent.clear()

    def both(conn: Connection) -> dict[uuid.UUID, int]:
        months = run_months(conn, {A: 202602, B: 202602})
        assert run_months(conn, {B: 202603}) == {B: 202602}  # remembered: no statement
        return months

    assert store.write(both) == {A: 202601, B: 202602}
    filing = [s for s in sent if "run_months" in s]
    # PostgreSQL files B and reads A's month in one statement; SQLite reads, then inserts.
    assert len(filing) == (1 if store.dialect == "postgresql" else 2)


def test_a_run_filed_before_costs_one_statement(statements: tuple[Store, list[str]]) -> None:
    """A run's later events (its COMPLETE after its START) find it filed: one read, and no
    insert that would skip it."""
    store, sent = statements
    store.write(lambda conn: run_months(conn, {A: 202601}))
    sent.clear()
    assert store.write(lambda conn: run_months(conn, {A: 202602})) == {A: 202601}
    assert len([s for s in sent if "run_months" in s]) == 1


def test_a_run_a_concurrent_writer_files_first_gets_that_writers_month(store: Store) -> None:
    filed, release = threading.Event(), threading.Event()

    def first(conn: Connection) -> None:
        run_months(conn, {A: 202601})
        filed.set()
        release.wait(30)

    writer = threading.Thread(target=store.write, args=(first,))
    writer.start()
    filed.wait(30)
    found: dict[uuid.UUID, int] = {}
    second = threading.Thread(
        target=lambda: found.update(store.write(lambda conn: run_months(conn, {A: 202602})))
    )
    second.start()
    _until_waiting(store)  # the second writer's insert waits for the first's commit
    release.set()
    writer.join(30)
    second.join(30)
    assert found == {A: 202601}


def _until_waiting(store: Store) -> None:
    """Until another backend waits on a lock (PostgreSQL); SQLite's second writer waits to
    begin, which nothing shows: a moment is given instead."""
    if store.dialect != "postgresql":
        time.sleep(0.2)
        return
    for _ in range(300):
        with store.read(primary=True) as conn:
            waiting = conn.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).scalar_one()
        if waiting:
            return
        time.sleep(0.05)
    raise AssertionError("the second writer never waited")
