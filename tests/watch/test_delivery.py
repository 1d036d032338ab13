"""Delivery to a real HTTP receiver on both stores: the signature, retries on 5xx and no
answer, the dead state after the bound, refusals, the delivery log and redelivery."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.conftest import free_port, post
from tests.watch.test_notifications import app, job_run, notify, subscribe
from tests.watch_support import (
    SECRET,
    Receiver,
    deliver,
    dispatch,
    immediate_retries,
    receiver_running,
)
from upstream.model.watch import parse_subscription
from upstream.store.engine import Store
from upstream.watch.delivery import WebhookSink

__all__ = ["app"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


def one_notification(app: TestClient, receiver: Receiver) -> str:
    """A subscription with one notification waiting; its id."""
    post(app, job_run("etl", ["raw"], ["orders"]))
    subscription = subscribe(app, receiver, "orders", direction="downstream")
    post(app, job_run("report", ["orders"], ["dash"]))
    return subscription


def log_of(app: TestClient, subscription: str) -> list[dict[str, object]]:
    response = app.get(f"/v3/subscriptions/{subscription}/deliveries")
    assert response.status_code == 200, response.text
    deliveries: list[dict[str, object]] = response.json()["deliveries"]
    return deliveries


def test_the_signature_is_the_hmac_of_the_exact_body(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    one_notification(app, receiver)
    notify(store)
    [received] = receiver.received
    expected = hmac.new(SECRET.encode(), received.body, hashlib.sha256).hexdigest()
    assert received.headers["X-Upstream-Signature"] == f"sha256={expected}"
    assert received.headers["Content-Type"] == "application/json"


def test_three_server_errors_then_success_is_sent_once_more_and_no_other(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    subscription = one_notification(app, receiver)
    receiver.answers = [500, 500, 500]
    dispatch(store)
    for _ in range(6):  # more rounds than needed: nothing is sent after the success
        deliver(store)
    assert len(receiver.received) == 4
    assert len({r.body for r in receiver.received}) == 1  # the same bytes, the same id
    [logged] = log_of(app, subscription)
    assert logged["state"] == "delivered"
    assert [a["status"] for a in logged["attempts"]] == [500, 500, 500, 200]  # type: ignore[union-attr]
    assert logged["id"] == receiver.documents()[0]["id"]


def test_a_dead_receiver_is_given_up_after_the_bound_and_redelivered_by_hand(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    subscription = one_notification(app, receiver)
    receiver.answers = [503, 502, 500, 500]
    dispatch(store)
    for _ in range(5):
        deliver(store, immediate_retries(attempts=3))
    assert len(receiver.received) == 3
    [logged] = log_of(app, subscription)
    assert logged["state"] == "dead"
    answer = app.post(f"/v3/subscriptions/{subscription}/deliveries/{logged['id']}/redeliver")
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"id": logged["id"], "state": "pending"}
    deliver(store, immediate_retries(attempts=3))  # answered 500 (the last queued), then 200
    deliver(store, immediate_retries(attempts=3))
    assert len(receiver.received) == 5
    [logged] = log_of(app, subscription)
    assert logged["state"] == "delivered"
    assert [a["status"] for a in logged["attempts"]] == [503, 502, 500, 500, 200]  # type: ignore[union-attr]


def test_a_refusal_is_final_and_an_unreachable_receiver_is_retried(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    subscription = one_notification(app, receiver)
    receiver.answers = [404]
    notify(store)
    notify(store)
    [logged] = log_of(app, subscription)
    assert logged["state"] == "dead"
    assert len(receiver.received) == 1

    # A receiver nobody listens on: no status, an error, and pending again.
    dead_url = f"http://127.0.0.1:{free_port()}/hook"
    post(app, job_run("etl", ["raw"], ["orders"]))
    body = {
        "watch": {"dataset": {"namespace": "warehouse", "name": "orders"}},
        "deliver": {"webhook": {"url": dead_url, "secret": SECRET}},
    }
    down = app.post("/v3/subscriptions", json=body).json()["id"]
    post(app, job_run("second_report", ["orders"], ["dash2"]))
    notify(store)
    [pending] = log_of(app, down)
    assert pending["state"] == "pending"
    [attempt] = pending["attempts"]  # type: ignore[misc]
    assert attempt["status"] is None
    assert "ConnectError" in attempt["error"]


def test_redelivering_an_unknown_notification_is_404(app: TestClient, receiver: Receiver) -> None:
    subscription = one_notification(app, receiver)
    missing = "00000000-0000-0000-0000-000000000000"
    answer = app.post(f"/v3/subscriptions/{subscription}/deliveries/{missing}/redeliver")
    assert answer.status_code == 404
    assert app.get(f"/v3/subscriptions/{missing}/deliveries").status_code == 404


def test_a_webhook_sink_makes_its_http_client_at_the_first_delivery(
    receiver: Receiver,
) -> None:
    """Every server starts a watcher; most never deliver, so none pays for a client (and
    its certificates) until a notification goes out. Closing one never used is a no-op."""
    unused = WebhookSink(timeout=5)
    unused.close()
    assert "client" not in unused.__dict__
    sink = WebhookSink(timeout=5)
    asked = {
        "watch": {"dataset": {"namespace": "ns", "name": "orders"}},
        "deliver": {"webhook": {"url": receiver.url, "secret": SECRET}},
    }
    spec, _ = parse_subscription(asked, max_levels=10)
    assert sink.send(spec, uuid.uuid4(), "{}", SECRET).status == 200
    assert "client" in sink.__dict__
    sink.close()
