"""Each kind of change a subscription asks for, on hand-worked graphs, on both stores, sent
to a real HTTP receiver: exactly the expected notification, and nothing for writes that
change nothing a subscriber sees."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.conftest import post
from tests.watch_support import SECRET, Receiver, deliver, dispatch, receiver_running, recent
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.watch.payload import Links

NS = "warehouse"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


@pytest.fixture
def app(db_url: str) -> Iterator[TestClient]:
    """The API with webhooks to loopback allowed and no watcher of its own: each test runs
    the dispatcher and the deliverer itself."""
    settings = Settings(db_url=db_url, allow_private_webhooks=True, watch=False)
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client


def job_run(job: str, reads: list[str], writes: list[str], **extra: Any) -> dict[str, Any]:
    return run_event(
        (NS, job),
        inputs=[ds(NS, name) for name in reads],
        outputs=[ds(NS, name) for name in writes],
        time=extra.pop("time", recent()),
        **extra,
    )


def subscribe(app: TestClient, receiver: Receiver, dataset: str, **asked: Any) -> str:
    body = {
        "watch": {"dataset": {"namespace": NS, "name": dataset}},
        "deliver": {"webhook": {"url": receiver.url, "secret": SECRET}},
        **asked,
    }
    response = app.post("/v3/subscriptions", json=body)
    assert response.status_code == 201, response.text
    subscription: str = response.json()["id"]
    return subscription


def notify(store: Store) -> None:
    """One dispatcher round and one delivery round, as the server's watcher runs them."""
    dispatch(store)
    deliver(store)


def relation(data: str, program: str, access: str, runs: list[str]) -> dict[str, Any]:
    return {
        "data": f"dataset.{NS}.{data}",
        "program": f"job.{NS}.{program}",
        "accesses": [access],
        "runs": runs,
        "components": [],
    }


def test_a_new_reader_downstream_is_one_relation_added_notification(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscription = subscribe(app, receiver, "orders", direction="downstream", levels=2)
    notify(store)
    assert receiver.documents() == []  # the radius as it stood is the starting point

    report = job_run("report", ["orders"], ["dash"])
    post(app, report)
    notify(store)

    [sent] = receiver.documents()
    run = report["run"]["runId"]
    assert sent["subscription"] == subscription
    assert sent["change"] == "relation_added"
    assert sent["changes"] == ["relation_added"]
    assert sent["added"] == [
        relation("dash", "report", "write", [run]),
        relation("orders", "report", "read", [run]),
    ]
    assert sent["removed"] == []
    assert sent["deleted"] == []
    assert sent["failedRuns"] == []
    assert sorted(sent["data"]) == [f"dataset.{NS}.dash", f"dataset.{NS}.orders"]
    assert sent["programs"] == {
        f"job.{NS}.report": {"entityId": {"type": "job", "namespace": NS, "name": "report"}}
    }
    assert sent["links"]["watched"] == (
        f"https://lineage.example.com/#/dataset?ns={NS}&name=orders"
    )


def test_a_new_upstream_source_three_levels_up(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]), job_run("report", ["orders"], ["dash"]))
    subscribe(app, receiver, "dash", direction="upstream", levels=3)
    loader = job_run("loader", ["s3_dump"], ["raw"])
    post(app, loader)
    notify(store)
    [sent] = receiver.documents()
    run = loader["run"]["runId"]
    assert sent["added"] == [
        relation("raw", "loader", "write", [run]),
        relation("s3_dump", "loader", "read", [run]),
    ]


def test_writes_that_change_nothing_seen_send_nothing(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="both", levels=2)
    start = job_run("report", ["orders"], ["dash"], event_type="START")
    post(app, start)
    notify(store)
    assert len(receiver.documents()) == 1

    # The COMPLETE repeats its START; then the next run repeats the last one; then a write
    # far outside the radius.
    complete = dict(start, eventType="COMPLETE", eventTime=start["eventTime"])
    post(app, complete)
    notify(store)
    post(app, job_run("report", ["orders"], ["dash"]))
    notify(store)
    post(app, job_run("other", ["elsewhere"], ["unrelated"]))
    notify(store)
    assert len(receiver.documents()) == 1


def test_only_the_kinds_asked_for_are_sent(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="downstream", changes=["relation_removed"])
    post(app, job_run("report", ["orders"], ["dash"]))
    notify(store)
    assert receiver.documents() == []


def test_a_deleted_job_is_deleted_and_its_relations_removed_then_revived(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    first = job_run("report", ["orders"], ["dash"])
    post(app, first)
    subscribe(app, receiver, "orders", direction="downstream", levels=1)

    assert app.delete(f"/api/v1/namespaces/{NS}/jobs/report").status_code == 200
    notify(store)
    [deleted] = receiver.documents()
    assert deleted["change"] == "deleted"
    assert deleted["changes"] == ["deleted", "relation_removed"]
    assert deleted["deleted"] == [{"type": "job", "namespace": NS, "name": "report"}]
    assert deleted["removed"] == [
        relation("dash", "report", "write", []),
        relation("orders", "report", "read", []),
    ]
    assert deleted["added"] == []

    again = job_run("report", ["orders"], ["dash"])
    post(app, again)
    notify(store)
    revived = receiver.documents()[1]
    assert revived["changes"] == ["relation_added", "revived"]
    assert revived["revived"] == [{"type": "job", "namespace": NS, "name": "report"}]
    runs = sorted([first["run"]["runId"], again["run"]["runId"]])
    assert sorted(revived["added"][0]["runs"]) == runs
    assert [r["data"] for r in revived["added"]] == [f"dataset.{NS}.dash", f"dataset.{NS}.orders"]


def test_the_watched_dataset_deleted(app: TestClient, store: Store, receiver: Receiver) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="upstream", levels=1)
    assert app.delete(f"/api/v1/namespaces/{NS}/datasets/orders").status_code == 200
    notify(store)
    [sent] = receiver.documents()
    assert sent["deleted"] == [{"type": "dataset", "namespace": NS, "name": "orders"}]
    assert [r["data"] for r in sent["removed"]] == [f"dataset.{NS}.orders", f"dataset.{NS}.raw"]


def test_a_failed_run_that_wrote_into_the_radius(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]), job_run("report", ["orders"], ["dash"]))
    subscribe(app, receiver, "orders", direction="downstream", levels=1)
    failed = job_run("report", ["orders"], ["dash"], event_type="FAIL")
    post(app, failed)
    notify(store)
    [sent] = receiver.documents()
    assert sent["changes"] == ["run_failed"]
    assert sent["failedRuns"] == [
        {
            "runId": failed["run"]["runId"],
            "state": "FAIL",
            "program": f"job.{NS}.report",
            "wrote": [f"dataset.{NS}.dash"],
        }
    ]
    # A failed run of a job outside the radius is not told.
    post(app, job_run("other", ["x"], ["y"], event_type="ABORT"))
    notify(store)
    assert len(receiver.documents()) == 1


def test_a_failure_written_before_the_subscription_is_not_news(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """The dispatcher has not looked at the failure yet when the subscription is made."""
    post(app, job_run("etl", ["raw"], ["orders"]), job_run("report", ["orders"], ["dash"]))
    post(app, job_run("report", ["orders"], ["dash"], event_type="FAIL"))
    subscribe(app, receiver, "orders", direction="downstream")
    notify(store)
    assert receiver.documents() == []


def test_relations_with_no_run_in_the_active_days_are_removed_at_the_sweep(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="upstream", activeDays=3)
    notify(store)
    later = recent(-24 * 4)  # four days on: the sweep finds the run too old
    dispatch(store, now=later)
    deliver(store, at=later)
    [sent] = receiver.documents()
    assert sent["changes"] == ["relation_removed"]
    assert [r["data"] for r in sent["removed"]] == [f"dataset.{NS}.orders", f"dataset.{NS}.raw"]


def test_several_subscriptions_each_get_their_own(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    down = subscribe(app, receiver, "orders", direction="downstream")
    up = subscribe(app, receiver, "orders", direction="upstream")
    post(app, job_run("report", ["orders"], ["dash"]))
    notify(store)
    assert [d["subscription"] for d in receiver.documents()] == [down]
    # A new writer of the dataset is upstream of it, not downstream.
    post(app, job_run("loader", ["s3"], ["orders"]))
    notify(store)
    assert [d["subscription"] for d in receiver.documents()[1:]] == [up]


def test_a_dispatcher_behind_another_stores_nothing(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """Two dispatchers read the same changes; the one that stores second finds the cursor
    moved and stores nothing, so the notification exists once."""
    from upstream.watch import dispatcher

    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="downstream")
    post(app, job_run("report", ["orders"], ["dash"]))
    one, other = (dispatcher.Dispatcher(store, Links(), timedelta(days=1)) for _ in range(2))
    with store.read() as conn:
        first = one._round(conn, recent(0))
        second = other._round(conn, recent(0))
    assert first is not None
    assert second is not None
    assert store.write(lambda conn: dispatcher._store(conn, first))[0] == 1
    assert store.write(lambda conn: dispatcher._store(conn, second)) == (0, None)
    deliver(store)
    assert len(receiver.documents()) == 1


def test_two_dispatchers_sweeping_the_same_quiet_log_store_one_notification(
    app: TestClient, store: Store, db_url: str, receiver: Receiver
) -> None:
    """A sweep with no write since the last round leaves the cursor's position where it
    was. `one` reads; `other`, on its own engine as another server process, runs a whole
    sweep and stores the relation gone; then `one` stores: it must find its round taken and
    store nothing, so the receiver records one id."""
    from upstream.watch import dispatcher

    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="upstream", activeDays=3)
    notify(store)
    later = recent(-24 * 4)  # four days on: the sweep finds the run too old
    elsewhere = Store(db_url)
    try:
        one = dispatcher.Dispatcher(store, Links(), timedelta(days=1))
        other = dispatcher.Dispatcher(elsewhere, Links(), timedelta(days=1))
        with store.read() as conn:
            first = one._round(conn, later)
        assert first is not None
        assert len(first.notifications) == 1
        assert other.dispatch_once(later) == 1
        assert store.write(lambda conn: dispatcher._store(conn, first)) == (0, None)
    finally:
        elsewhere.dispose()
    deliver(store, at=later)
    [sent] = receiver.documents()
    assert sent["changes"] == ["relation_removed"]


def test_two_dispatchers_storing_the_same_sweep_at_once_store_it_once(
    app: TestClient, store: Store, db_url: str, receiver: Receiver
) -> None:
    """Both read the cursor before either stores; `one` stores and holds its transaction
    open, so `other`'s store waits on the cursor's row and, once `one` commits, must find
    the round taken. SQLite runs one write at a time: there the test above is the race."""
    from upstream.watch import dispatcher

    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite runs one write transaction at a time")
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscribe(app, receiver, "orders", direction="upstream", activeDays=3)
    notify(store)
    later = recent(-24 * 4)
    one, other = (dispatcher.Dispatcher(store, Links(), timedelta(days=1)) for _ in range(2))
    with store.read() as conn:
        first, second = one._round(conn, later), other._round(conn, later)
    assert first is not None
    assert second is not None
    elsewhere = Store(db_url)
    outcome: list[tuple[int, object]] = []
    waiting = threading.Thread(
        target=lambda: outcome.append(elsewhere.write(lambda c: dispatcher._store(c, second)))
    )
    try:
        with store.engine.connect() as conn, conn.begin():
            assert dispatcher._store(conn, first)[0] == 1
            waiting.start()
            waiting.join(1)
            assert waiting.is_alive()  # waiting for the cursor's row
        waiting.join(30)
    finally:
        elsewhere.dispose()
    assert outcome == [(0, None)]
    deliver(store, at=later)
    [sent] = receiver.documents()
    assert sent["changes"] == ["relation_removed"]
