"""Subscriptions and their notifications, read with a token limited to some namespaces
(design §5): a subscription is listed when what it watches is readable, a notification
when every object its body names is (it is shown as it was sent, never rewritten), and a
hidden subscription reads exactly like a missing one.

The estate: finance's reconcile read finance's invoices and wrote finance's ledger; vault's
keeper wrote vault's secret_table. The full writer subscribes to the ledger's upstream (two
levels) and to the vault namespace. Then, each seen by its own dispatcher round: finance's
load writes the invoices (upstream of the ledger: told to the first), and reconcile reads
vault's secret_table too (told to both)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
    FIN_DS,
    FIN_JOBS,
    READ_ALL,
    SETTINGS_TOKENS,
    WRITE_ALL,
    bearer,
    issue,
)
from tests.builders import ds, run_event
from tests.watch_support import dispatch, recent
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store.engine import Store

VAULT = "vault"
MISSING = "00000000-0000-4000-8000-0000000000ff"


@pytest.fixture
def server(db_url: str) -> Iterator[TestClient]:
    """The API with the estate's tokens and no watcher of its own: the test runs the
    dispatcher itself."""
    settings = Settings(db_url=db_url, tokens=SETTINGS_TOKENS, watch=False)  # type: ignore[arg-type]
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client


def post(client: TestClient, job: tuple[str, str], reads: list[Any], writes: list[Any]) -> None:
    event = run_event(job, time=recent(), inputs=reads, outputs=writes)
    response = client.post("/api/v1/lineage", json=[event], headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text


def subscribe(client: TestClient, watch: dict[str, Any]) -> str:
    body = {
        "watch": watch,
        "direction": "upstream",
        "levels": 2,
        "changes": ["relation_added"],
        "deliver": {"kafka": {"topic": "lineage"}},
    }
    response = client.post("/v3/subscriptions", json=body, headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text
    subscription: str = response.json()["id"]
    return subscription


@pytest.fixture
def watched(server: TestClient, store: Store) -> tuple[TestClient, str, str]:
    """The estate above, its notifications made: (client, ledger's subscription, vault's)."""
    post(server, (FIN_JOBS, "reconcile"), [ds(FIN_DS, "invoices")], [ds(FIN_DS, "ledger")])
    post(server, (VAULT, "keeper"), [], [ds(VAULT, "secret_table")])
    ledger = subscribe(server, {"dataset": {"namespace": FIN_DS, "name": "ledger"}})
    vault = subscribe(server, {"namespace": VAULT})
    dispatch(store)
    post(server, (FIN_JOBS, "load"), [ds(FIN_DS, "orders")], [ds(FIN_DS, "invoices")])
    dispatch(store)
    post(server, (FIN_JOBS, "reconcile"), [ds(VAULT, "secret_table")], [ds(FIN_DS, "ledger")])
    dispatch(store)
    return server, ledger, vault


def get(client: TestClient, path: str, token: str) -> Any:
    response = client.get(path, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def test_a_reader_is_listed_the_subscriptions_watching_what_it_may_read(
    watched: tuple[TestClient, str, str],
) -> None:
    client, ledger, vault = watched
    finance = issue(client, "read:finance/*")["token"]
    listed = get(client, "/v3/subscriptions", finance)["subscriptions"]
    assert [s["id"] for s in listed] == [ledger]
    full = get(client, "/v3/subscriptions", READ_ALL)["subscriptions"]
    assert [s["id"] for s in full] == [ledger, vault]
    assert get(client, f"/v3/subscriptions/{ledger}", finance)["id"] == ledger


@pytest.mark.parametrize("tail", ["", "/deliveries"])
def test_a_hidden_subscription_reads_like_a_missing_one(
    watched: tuple[TestClient, str, str], tail: str
) -> None:
    client, _, vault = watched
    finance = issue(client, "read:finance/*")["token"]
    hidden = client.get(f"/v3/subscriptions/{vault}{tail}", headers=bearer(finance))
    missing = client.get(f"/v3/subscriptions/{MISSING}{tail}", headers=bearer(finance))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(MISSING.encode(), vault.encode())
    assert client.get(f"/v3/subscriptions/{vault}{tail}", headers=bearer(READ_ALL)).is_success


def test_a_notification_naming_a_hidden_namespace_is_not_listed_nor_counted(
    watched: tuple[TestClient, str, str],
) -> None:
    """The ledger's subscription was told twice: load's write of the invoices (finance
    only), then reconcile's read of vault's secret_table. A finance reader is shown the
    first alone, as it was sent."""
    client, ledger, _ = watched
    full = get(client, f"/v3/subscriptions/{ledger}/deliveries", READ_ALL)
    assert full["totalCount"] == 2
    assert VAULT in repr(full["deliveries"][0]["body"])
    finance = issue(client, "read:finance/*")["token"]
    shown = get(client, f"/v3/subscriptions/{ledger}/deliveries", finance)
    assert shown["totalCount"] == 1
    assert shown["deliveries"] == full["deliveries"][1:]
    assert VAULT not in repr(shown)


def test_only_a_token_reading_everything_makes_or_manages_subscriptions(
    watched: tuple[TestClient, str, str],
) -> None:
    """A notification is sent as made, naming whatever the watched lineage reaches: a writer
    limited to finance may not subscribe, even to finance's ledger, nor stop or redeliver
    a subscription; nothing changes."""
    client, ledger, _ = watched
    writer = bearer(issue(client, "write:finance/*")["token"])
    before = get(client, "/v3/subscriptions", READ_ALL)
    body = {
        "watch": {"dataset": {"namespace": FIN_DS, "name": "ledger"}},
        "deliver": {"kafka": {"topic": "lineage"}},
    }
    [delivery] = get(client, f"/v3/subscriptions/{ledger}/deliveries?limit=1", READ_ALL)[
        "deliveries"
    ]
    refused = [
        client.post("/v3/subscriptions", json=body, headers=writer),
        client.delete(f"/v3/subscriptions/{ledger}", headers=writer),
        client.post(
            f"/v3/subscriptions/{ledger}/deliveries/{delivery['id']}/redeliver", headers=writer
        ),
    ]
    for response in refused:
        assert response.status_code == 403
        assert response.json()["message"] == (
            "watching lineage needs a token that may read every namespace"
        )
    assert get(client, "/v3/subscriptions", READ_ALL) == before
    again = get(client, f"/v3/subscriptions/{ledger}/deliveries?limit=1", READ_ALL)
    assert again["deliveries"] == [delivery]
