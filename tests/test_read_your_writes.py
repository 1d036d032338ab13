"""Read-your-writes by position (issue 40 item 2): every acknowledged write answers with the
change-log position it committed at; a read that names a position (`?after=` or the header)
is answered once this server's view includes it, else 503 with Retry-After; a malformed
position or one from the future is 400 naming `after`. Both stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from upstream.api.app import create_app
from upstream.model.errors import InvalidParameter
from upstream.query.positions import Views, parse_after
from upstream.settings import Settings
from upstream.store.change_log import changes_since, position
from upstream.store.engine import Store

NS = "shop"
RUN = "33333333-0000-4000-8000-000000000001"
HEADER = "X-Upstream-Position"
READS = [
    f"/api/v1/namespaces/{NS}/datasets/totals",
    f"/v3/namespaces/{NS}/datasets/totals/lineage",
    "/api/v1/tags",
]


def _load() -> dict[str, object]:
    return run_event(
        (NS, "load"), run_id=RUN, inputs=[ds(NS, "orders")], outputs=[ds(NS, "totals")]
    )


@pytest.fixture
def app_client(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db_url=db_url, position_wait=0.2)
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client


def _stored_position(store: Store) -> int:
    with store.read() as conn:
        return position(conn)


def _post(client: TestClient) -> int:
    response = client.post("/api/v1/lineage", json=_load())
    assert response.status_code == 201, response.text
    return int(response.headers[HEADER])


def test_a_post_answers_with_the_position_its_events_committed_at(
    app_client: TestClient, store: Store
) -> None:
    at = _post(app_client)
    assert at == _stored_position(store) == 2  # its runs, then its entities
    with store.read() as conn:
        assert [c.position for c in changes_since(conn, 0)] == [1, 2]
    # Stored already: the position that includes it, the newest.
    assert _post(app_client) == 2


def test_a_batch_and_field_operations_answer_with_their_position(
    app_client: TestClient, store: Store
) -> None:
    response = app_client.post("/api/v1/lineage", json=[_load()])
    assert response.status_code == 201
    assert int(response.headers[HEADER]) == _stored_position(store) == 2
    document = {
        "destination": {"name": "totals", "fields": ["sum"]},
        "sources": [{"name": "orders"}],
        "operations": [{"name": "add", "inputs": ["orders"], "outputs": ["sum"]}],
        "job": "sum",
        "run": {"runId": "33333333-0000-4000-8000-000000000002"},
    }
    response = app_client.post(f"/v3/namespaces/{NS}/lineage/field-operations", json=document)
    assert response.status_code == 201, response.text
    assert int(response.headers[HEADER]) == _stored_position(store) > 2


def test_deletes_and_tags_answer_with_their_position(app_client: TestClient, store: Store) -> None:
    _post(app_client)
    tagged = app_client.post(f"/api/v1/namespaces/{NS}/datasets/totals/tags/pii")
    assert tagged.status_code == 200
    assert int(tagged.headers[HEADER]) == _stored_position(store) == 3
    deleted = app_client.delete(f"/api/v1/namespaces/{NS}/datasets/orders")
    assert int(deleted.headers[HEADER]) == _stored_position(store) == 4
    described = app_client.put("/api/v1/tags/pii", json={"description": "personal"})
    assert int(described.headers[HEADER]) == 4  # changes no dataset: nothing appended


@pytest.mark.parametrize("path", READS)
def test_a_read_after_a_write_it_includes_answers(app_client: TestClient, path: str) -> None:
    at = _post(app_client)
    assert app_client.get(path, params={"after": at}).status_code == 200
    assert app_client.get(path, headers={HEADER: str(at)}).status_code == 200
    assert app_client.get(path, params={"after": 0}).status_code == 200


@pytest.mark.parametrize("path", READS)
@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "", " 2", "²", "2a"])
def test_a_malformed_position_is_refused_naming_after(
    app_client: TestClient, path: str, bad: str
) -> None:
    _post(app_client)
    answer = app_client.get(path, params={"after": bad})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == "after"


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "2a"])
def test_a_malformed_position_header_is_refused_naming_after(
    app_client: TestClient, bad: str
) -> None:
    _post(app_client)
    answer = app_client.get(READS[1], headers={HEADER: bad})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [
        {"path": "after", "message": f"must be a change-log position (0 or more), not {bad!r}"}
    ]


@pytest.mark.parametrize("path", READS)
def test_a_position_from_the_future_is_refused_naming_after(
    app_client: TestClient, path: str
) -> None:
    at = _post(app_client)
    answer = app_client.get(path, params={"after": at + 1})
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {"path": "after", "message": f"position {at + 1} is beyond the newest, {at}"}
    ]
    assert app_client.get(path, headers={HEADER: str(at + 1)}).status_code == 400


def test_a_view_that_does_not_catch_up_in_time_answers_503(app_client: TestClient) -> None:
    at = _post(app_client)
    views: Views = app_client.app.state.views  # type: ignore[attr-defined]
    views.plug(lambda: at - 1)  # an index one change behind, and stuck there
    answer = app_client.get(READS[1], params={"after": at})
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert f"includes position {at - 1}, not yet {at}" in answer.json()["message"]
    # A read that names nothing, or what the view includes, does not wait for it.
    assert app_client.get(READS[1]).status_code == 200
    assert app_client.get(READS[1], params={"after": at - 1}).status_code == 200


def test_a_read_waits_for_a_view_that_catches_up(app_client: TestClient) -> None:
    at = _post(app_client)
    looks: list[int] = []

    def catching_up() -> int:
        looks.append(len(looks))
        return at if len(looks) >= 3 else 0  # behind at the first two looks

    app_client.app.state.views.plug(catching_up)  # type: ignore[attr-defined]
    assert app_client.get(READS[1], params={"after": at}).status_code == 200
    assert len(looks) == 3


def test_parse_after_takes_the_larger_of_query_and_header() -> None:
    assert parse_after(None, None) is None
    assert parse_after("3", None) == 3
    assert parse_after("3", "5") == 5
    assert parse_after(None, "0") == 0
    with pytest.raises(InvalidParameter) as refused:
        parse_after("3", "x")
    assert refused.value.problems[0].path == "after"
