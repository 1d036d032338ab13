"""What a dispatcher remembers between rounds, on both stores: a round parses no radius it
parsed before, reads again one another process stored, looks only at the subscriptions a
change touched, and reads a schema again only when a change named its dataset. Each with
the notifications it must still make. Without subscriptions a round writes nothing between
two sweeps, however many changes it follows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import ds, run_event, schema_facet
from tests.conftest import post
from tests.watch.test_notifications import NS, app, job_run, subscribe
from tests.watch_support import Receiver, deliver, dispatch, receiver_running, recent
from upstream.store import change_log
from upstream.store import schema as t
from upstream.store import subscriptions as rows
from upstream.store.engine import Store
from upstream.watch import dispatcher
from upstream.watch.memory import SchemaMemory
from upstream.watch.payload import Links

__all__ = ["app"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    """The SQL statements `store` runs inside the block."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        # The statement and its parameters; an id SQLite is given as bytes, as hex digits.
        parameters = args[3]
        if isinstance(parameters, tuple | list):
            parameters = [_hex_bytes(value) for value in parameters]
        seen.append(f"{args[2]} {parameters!r}")

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)


def _hex_bytes(value: Any) -> Any:
    return bytes(value).hex() if isinstance(value, bytes | memoryview) else value


def reading(column: str) -> Callable[[str], bool]:
    return lambda statement: statement.lstrip().upper().startswith("SELECT") and column in statement


def added(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["data"], r["program"]) for r in document["added"]]


def test_a_warm_round_parses_no_radius(app: TestClient, store: Store, receiver: Receiver) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="downstream")
    dispatch(store)  # the first round reads the subscription
    post(app, job_run("report", ["orders"], ["dash"]))
    with statements(store) as seen:
        assert dispatch(store) == 1
    assert [s for s in seen if reading("subscriptions.radius")(s)] == []
    assert [s for s in seen if reading("subscriptions.spec")(s)] == []
    deliver(store)
    [sent] = receiver.documents()
    assert added(sent) == [(f"dataset.{NS}.dash", f"job.{NS}.report"),
                           (f"dataset.{NS}.orders", f"job.{NS}.report")]  # fmt: skip


def test_a_radius_another_process_stored_is_read_again(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """`one` remembers the radius before `report` appeared; `other` tells `report` and
    stores the radius with it. `one` must read that radius again (its version moved), so it
    tells only `audit`, not `report` a second time."""
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="downstream")
    one, other = (dispatcher.Dispatcher(store, Links(), timedelta(days=1)) for _ in range(2))
    assert one.dispatch_once() == 0
    post(app, job_run("report", ["orders"], ["dash"]))
    assert other.dispatch_once() == 1
    post(app, job_run("audit", ["orders"], ["audit"]))
    assert one.dispatch_once() == 1
    post(app, job_run("board", ["orders"], ["board"]))
    assert one.dispatch_once() == 1  # its own store remembered
    deliver(store)
    assert [added(d) for d in receiver.documents()] == [
        [(f"dataset.{NS}.dash", f"job.{NS}.report"), (f"dataset.{NS}.orders", f"job.{NS}.report")],
        [(f"dataset.{NS}.audit", f"job.{NS}.audit"), (f"dataset.{NS}.orders", f"job.{NS}.audit")],
        [(f"dataset.{NS}.board", f"job.{NS}.board"), (f"dataset.{NS}.orders", f"job.{NS}.board")],
    ]


def test_a_round_costs_what_the_change_touched_not_every_subscription(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """A change outside every radius costs a round the same statements with twelve
    subscriptions as with six: the subscriptions are found by the entities the change
    touched, not looked at one by one. A change inside one radius is told to that one."""
    for number in range(12):
        post(app, job_run(f"etl_{number}", [f"raw_{number}"], [f"orders_{number}"]))

    def round_elsewhere() -> list[str]:
        post(app, job_run("elsewhere", ["a"], ["b"]))
        with statements(store) as seen:
            assert dispatch(store) == 0
        return seen

    for number in range(6):
        subscribe(app, receiver, f"orders_{number}", direction="downstream")
    round_elsewhere()  # the first round reads the subscriptions
    six = round_elsewhere()
    for number in range(6, 12):
        subscribe(app, receiver, f"orders_{number}", direction="downstream")
    round_elsewhere()
    twelve = round_elsewhere()
    assert len(twelve) == len(six)

    post(app, job_run("report", ["orders_7"], ["dash"]))
    assert dispatch(store) == 1
    deliver(store)
    [sent] = receiver.documents()
    assert added(sent) == [(f"dataset.{NS}.dash", f"job.{NS}.report"),
                           (f"dataset.{NS}.orders_7", f"job.{NS}.report")]  # fmt: skip


def test_schemas_are_read_again_only_for_datasets_a_change_named(
    app: TestClient, store: Store
) -> None:
    def write(name: str, *fields: str) -> None:
        schema = schema_facet(*((f, "int") for f in fields))
        post(app, run_event((NS, f"make_{name}"), outputs=[ds(NS, name, schema=schema)],
                            time=recent()))  # fmt: skip

    write("a", "x")
    write("b", "y")
    with store.read() as conn:
        ids = {n: str(i) for i, n in conn.execute(sa.select(t.datasets.c.id, t.datasets.c.name))}
    memory = SchemaMemory()
    fields = reading("datasets.fields")
    with store.read() as conn, statements(store) as seen:
        assert memory.at(conn, 0, 5, set()).fields([ids["a"], ids["b"]]) == {
            (ids["a"], "x"),
            (ids["b"], "y"),
        }
        assert len([s for s in seen if fields(s)]) == 1
    write("a", "x", "z")
    with store.read() as conn, statements(store) as seen:
        # From 5 to 7 the changes named `a`: only `a` is read again.
        schemas = memory.at(conn, 5, 7, {ids["a"]})
        assert schemas.fields([ids["a"], ids["b"]]) == {
            (ids["a"], "x"),
            (ids["a"], "z"),
            (ids["b"], "y"),
        }
        [read] = [s for s in seen if fields(s)]
        assert ids["a"].replace("-", "") in read.replace("-", "")
        assert ids["b"].replace("-", "") not in read.replace("-", "")
    with store.read() as conn, statements(store) as seen:
        # Read at another position than where the memory is (another process moved the
        # cursor), or after a reload: everything is read again.
        memory.at(conn, 6, 8, set()).fields([ids["b"]])
        memory.at(conn, 8, 9, None).fields([ids["b"]])
        assert len([s for s in seen if fields(s)]) == 2


def test_a_round_reads_aliases_once_and_stores_its_radii_in_one_statement(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """Three subscriptions the change concerns: one read of the watched datasets' aliases
    and one update of the three radii, not one of each per subscription."""
    post(app, job_run("etl", ["raw"], ["orders", "refunds", "returns"]))
    for dataset in ("orders", "refunds", "returns"):
        subscribe(app, receiver, dataset, direction="upstream")
    dispatch(store)
    post(app, job_run("loader", ["s3"], ["orders", "refunds", "returns"]))
    with statements(store) as seen:
        assert dispatch(store) == 3
    updates = [s for s in seen if s.lstrip().upper().startswith("UPDATE SUBSCRIPTIONS")]
    assert len(updates) == 1
    assert len([s for s in seen if reading("dataset_aliases")(s)]) == 1


def test_without_subscriptions_rounds_move_the_cursor_only_at_a_sweep(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    rounds = dispatcher.Dispatcher(store, Links(""), timedelta(hours=1))
    start = datetime.now(UTC)
    post(app, job_run("etl", ["raw"], ["orders"]))
    rounds.dispatch_once(start)  # the first round sweeps: the cursor starts here
    with store.read() as conn:
        swept = rows.cursor(conn)
    with statements(store) as seen:
        for minute in range(1, 6):
            post(app, job_run("etl", ["raw"], [f"orders_{minute}"]))
            rounds.dispatch_once(start + timedelta(minutes=minute))
    assert [s for s in seen if "watch_cursor" in s and not s.lstrip().startswith("SELECT")] == []
    with store.read() as conn:
        assert rows.cursor(conn) == swept
    later = start + timedelta(hours=1)
    rounds.dispatch_once(later)  # a sweep is due: the cursor catches up
    with store.read() as conn:
        moved, newest = rows.cursor(conn), change_log.position(conn)
    assert (moved.position, moved.swept_at, moved.rounds) == (newest, later, 2)
    # A first subscription made while the cursor is behind is told of what changed after
    # it only, not of the writes before it that its first round reads.
    post(app, job_run("etl", ["raw"], ["orders_6"]))
    rounds.dispatch_once(later + timedelta(minutes=1))
    subscribe(app, receiver, "orders_6", direction="upstream")
    post(app, job_run("late", ["early"], ["orders_6"]))
    assert dispatch(store) == 1
    assert deliver(store) == 1
    [sent] = receiver.documents()
    assert added(sent) == [(f"dataset.{NS}.early", f"job.{NS}.late"),
                           (f"dataset.{NS}.orders_6", f"job.{NS}.late")]  # fmt: skip
