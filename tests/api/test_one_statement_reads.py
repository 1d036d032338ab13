"""A lineage read on the graph index whose index and names are current is one statement, its
start's lookup, with no BEGIN around it (`Store.read_once`); one that needs more still
answers what was committed before it. Both stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.watch.test_dispatcher_memory import statements
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store.engine import Store

NS = "shop"
LINEAGE = f"/v3/namespaces/{NS}/datasets/totals/lineage"
DIFF = LINEAGE + "/diff"
#: A window holding the events' time: an answer with no relation asks when the latest run
#: outside its window was. Its end is fixed: one ending "now" moved by a second between two
#: reads, and the two answers then differed in their `end`.
WINDOW = {"start": "2000-01-01T00:00:00Z", "end": "2030-01-01T00:00:00Z"}
#: The diff's windows: before the events, and holding them.
WINDOWS = {
    "from": "2000-01-01T00:00:00Z..2001-01-01T00:00:00Z",
    "to": "2001-01-01T00:00:00Z..2030-01-01T00:00:00Z",
}


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db_url=db_url, watch=False)
    with TestClient(create_app(settings, migrate=False)) as client:
        while client.get("/ready").status_code != 200:
            pass
        yield client


def _post(client: TestClient, job: str, source: str) -> None:
    event = run_event((NS, job), inputs=[ds(NS, source)], outputs=[ds(NS, "totals")])
    assert client.post("/api/v1/lineage", json=event).status_code == 201


def _programs(client: TestClient) -> set[str]:
    answer = client.get(LINEAGE, params={"direction": "upstream", **WINDOW})
    assert answer.status_code == 200, answer.text
    return {relation["program"] for relation in answer.json()["relations"]}


@pytest.mark.parametrize(("path", "window"), [(LINEAGE, WINDOW), (DIFF, WINDOWS)])
def test_a_read_on_a_current_index_is_its_lookup_alone(
    client: TestClient, path: str, window: dict[str, str]
) -> None:
    _post(client, "load", "orders")
    first = client.get(path, params=window)  # brings the index to the write, reads the names
    assert first.status_code == 200, first.text
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    with statements(store) as made:
        assert client.get(path, params=window).json() == first.json()
    assert len(made) == 1, made
    assert made[0].startswith("SELECT EXISTS")


def test_a_read_after_a_write_reads_again_in_a_transaction(client: TestClient) -> None:
    _post(client, "load", "orders")
    assert _programs(client) == {"job.shop.load"}
    _post(client, "refund", "refunds")
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    with statements(store) as made:
        assert _programs(client) == {"job.shop.load", "job.shop.refund"}
    assert "BEGIN" in [statement.split()[0] for statement in made]
