"""Read-your-writes by position (issue 40 item 2): every acknowledged write answers with the
change-log position it committed at; a read that names a position (`?after=` or the header)
is answered once this server's views include it (its database and its graph index), else 503
with Retry-After; a malformed position or one from the future is 400 naming `after`. Both
stores."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.watch.test_dispatcher_memory import statements
from upstream.api.app import create_app
from upstream.client.errors import ApiRejected
from upstream.client.http import UpstreamClient
from upstream.client.positions import PositionFile
from upstream.commands.target import Target
from upstream.ingest.service import ingest_documents
from upstream.model.errors import InvalidParameter
from upstream.model.read_position import ReadPosition
from upstream.query.graph_index import index as index_module
from upstream.query.graph_index.index import index_of
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
        _until_ready(client)
        yield client


def _until_ready(client: TestClient) -> None:
    """Wait until the server has loaded its lineage index, as a load balancer would: a read
    naming a position waits for the load too, and the tests here give it 0.2 s."""
    while (ready := client.get("/ready")).status_code != 200:
        assert ready.json()["reason"] == "the lineage index is loading", ready.text


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
    """In the same words as in the header: `after` is read as the header is, not declared
    to FastAPI (whose pattern check answered in its own)."""
    _post(app_client)
    answer = app_client.get(path, params={"after": bad})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [
        {
            "path": "after",
            "message": "must be a change-log position (0 or more) or Kafka offsets "
            f"(kafka:<topic>:<partition>:<offset>, comma-separated), not {bad!r}",
        }
    ]


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "2a"])
def test_a_malformed_position_header_is_refused_naming_after(
    app_client: TestClient, bad: str
) -> None:
    _post(app_client)
    answer = app_client.get(READS[1], headers={HEADER: bad})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [
        {
            "path": "after",
            "message": "must be a change-log position (0 or more) or Kafka offsets "
            f"(kafka:<topic>:<partition>:<offset>, comma-separated), not {bad!r}",
        }
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
    views.plug(lambda _wanted: at - 1)  # an index one change behind, and stuck there
    answer = app_client.get(READS[1], params={"after": at})
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert f"includes position {at - 1}, not yet {at}" in answer.json()["message"]
    # A read that names nothing, or what the view includes, does not wait for it.
    assert app_client.get(READS[1]).status_code == 200
    assert app_client.get(READS[1], params={"after": at - 1}).status_code == 200


def test_a_read_waits_for_a_view_that_catches_up(app_client: TestClient) -> None:
    at = _post(app_client)
    # The index brought to the write first: on a busy machine its first change alone may
    # take the read's 0.2 s, and what is waited for here is the plugged view.
    assert app_client.get(READS[1]).status_code == 200
    looks: list[int] = []

    def catching_up(_wanted: int) -> int:
        looks.append(len(looks))
        return at if len(looks) >= 3 else 0  # behind at the first two looks

    app_client.app.state.views.plug(catching_up)  # type: ignore[attr-defined]
    assert app_client.get(READS[1], params={"after": at}).status_code == 200
    assert len(looks) == 3


def test_the_views_after_one_behind_are_asked_once_it_caught_up(store: Store) -> None:
    ingest_documents(store, [_load()], batch=False)
    at = _stored_position(store)
    views = Views(store)
    looks: list[str] = []

    def catching_up(wanted: int) -> int:
        looks.append("first")
        return wanted if looks.count("first") >= 3 else 0  # behind at the first two looks

    def caught_up(wanted: int) -> int:
        looks.append("second")
        return wanted

    views.plug(catching_up)
    views.plug(caught_up)
    assert views.wait_for(ReadPosition(at), within=5) == at
    assert looks == ["first", "first", "first", "second"]


def test_reads_waiting_together_cost_the_views_one_look_and_return_at_the_next(
    store: Store,
) -> None:
    """Eight reads wait for a position a view is behind: one of them looks for all (the
    others are woken by its looks), and the look after the view caught up answers every
    one of them, not a look each."""
    ingest_documents(store, [_load()], batch=False)
    at = _stored_position(store)
    views = Views(store)
    committed = threading.Event()
    looks: list[tuple[str, bool]] = []

    def replica(_wanted: int) -> int:
        caught_up = committed.is_set()
        looks.append((threading.current_thread().name, caught_up))
        return at if caught_up else at - 1

    views.plug(replica)
    readers = [
        threading.Thread(target=views.wait_for, args=(ReadPosition(at), 30), name=f"read-{n}")
        for n in range(8)
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + 30
    while len(looks) < 4 and time.monotonic() < deadline:  # a few pauses: all wait by then
        time.sleep(0.005)
    committed.set()
    for reader in readers:
        reader.join(30)
    assert not any(reader.is_alive() for reader in readers)
    assert len({name for name, _ in looks}) == 1  # one read looked for all
    assert [caught_up for _, caught_up in looks].count(True) == 1


def test_a_read_naming_a_position_its_views_were_seen_to_include_asks_them_nothing(
    store: Store,
) -> None:
    ingest_documents(store, [_load()], batch=False)
    at = _stored_position(store)
    views = Views(store)
    looks: list[int] = []
    views.plug(lambda wanted: looks.append(wanted) or at)
    assert views.wait_for(ReadPosition(at), within=5) == at
    assert views.wait_for(ReadPosition(at), within=5) == at
    assert views.wait_for(ReadPosition(at - 1), within=5) == at - 1
    assert looks == [at]


def test_a_position_a_view_soon_includes_costs_the_primary_no_statement(store: Store) -> None:
    """The primary is asked whether a position was ever given only once a read has waited a
    while: one a view includes at its second look (as a replica replays a write within
    milliseconds) was given, and asking cost every such read a statement."""
    ingest_documents(store, [_load()], batch=False)
    at = _stored_position(store)
    views = Views(store)
    looks: list[int] = []

    def replica(_wanted: int) -> int:
        looks.append(len(looks))
        return at if len(looks) >= 2 else at - 1

    views.plug(replica)
    with statements(store) as asked:
        assert views.wait_for(ReadPosition(at), within=5) == at
    assert len(looks) == 2
    assert asked == []


def test_a_read_its_views_include_costs_no_statement_more_than_one_naming_none(
    db_url: str,
) -> None:
    """Neither the index nor the primary is asked again: a position the index holds was
    given, and the read's own snapshot includes it."""
    settings = Settings(db_url=db_url, position_wait=0.2, watch=False)
    with TestClient(create_app(settings, migrate=False)) as client:
        _until_ready(client)
        at = _post(client)
        store: Store = client.app.state.store  # type: ignore[attr-defined]
        assert client.get(READS[0]).status_code == 200  # brings the index to the write
        assert index_of(store.engine).position == at
        with statements(store) as naming_none:
            assert client.get(READS[0]).status_code == 200
        with statements(store) as naming_it:
            assert client.get(READS[0], params={"after": at}).status_code == 200
    assert len(naming_it) == len(naming_none)


def test_parse_after_takes_the_larger_of_query_and_header() -> None:
    assert parse_after(None, None) is None
    assert parse_after("3", None) == ReadPosition(3)
    assert parse_after("3", "5") == ReadPosition(5)
    assert parse_after(None, "0") == ReadPosition(0)
    with pytest.raises(InvalidParameter) as refused:
        parse_after("3", "x")
    assert refused.value.problems[0].path == "after"


def _client(app_client: TestClient, **kw: Any) -> UpstreamClient:
    """An HTTP client of the in-process app (its requests handed to the test client)."""

    def forward(request: httpx.Request) -> httpx.Response:
        answer = app_client.request(
            request.method, str(request.url), content=request.read(), headers=request.headers
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return UpstreamClient("http://testserver", transport=httpx.MockTransport(forward), **kw)


def test_the_client_sends_the_position_of_its_last_write_with_its_reads(
    app_client: TestClient, store: Store
) -> None:
    with _client(app_client) as client:
        assert client.position is None
        client.post_events([_load()])
        assert client.position == str(_stored_position(store)) == "2"
        assert client.lineage_graph()
        # A view that has not caught up holds the client's read back; not another client's.
        app_client.app.state.views.plug(lambda _wanted: 1)  # type: ignore[attr-defined]
        with pytest.raises(ApiRejected) as held:
            client.lineage_graph()
        assert held.value.status == 503
    with _client(app_client, read_your_writes=False) as other:
        other.post_events([_load()])
        assert other.position is None
        assert other.lineage_graph()


def test_commands_carry_the_position_between_them(app_client: TestClient, store: Store) -> None:
    kept = PositionFile()  # under the test's XDG_STATE_HOME, as the command line's
    with _client(app_client, positions=kept) as client:
        client.post_events([_load()])
    assert kept.get("http://testserver") == "2"
    assert Target("http://testserver/").client().position == "2"
    with _client(app_client, positions=kept) as client:
        assert client.position == "2"
        client.delete(NS, "datasets", "orders")
        assert kept.get("http://testserver") == str(_stored_position(store)) == "3"


def test_a_kept_position_the_server_never_gave_is_forgotten(app_client: TestClient) -> None:
    """The store was started afresh since the last write: the read is answered all the same."""
    _post(app_client)
    kept = PositionFile()
    kept.put("http://testserver", "999")
    with _client(app_client, positions=kept) as client:
        assert client.lineage_graph()
        assert client.position is None
    assert kept.get("http://testserver") is None


def test_a_position_file_that_cannot_be_read_is_empty(tmp_path: Path) -> None:
    broken = tmp_path / "positions.json"
    broken.write_text("{not json")
    assert PositionFile(broken).get("http://a") is None
    PositionFile(broken).put("http://a", "4")
    assert PositionFile(broken).get("http://a") == "4"


def test_marquez_events_keep_their_own_after_and_take_the_position_as_a_header(
    app_client: TestClient,
) -> None:
    at = _post(app_client)
    events = "/api/v1/events/lineage"
    since = app_client.get(events, params={"after": "2026-11-01T11:00:00Z"})
    assert since.status_code == 200, since.text
    assert since.json()["totalCount"] == 1  # Marquez's `after`: events after that time
    assert app_client.get(events, headers={HEADER: str(at)}).status_code == 200
    assert app_client.get(events, headers={HEADER: str(at + 1)}).status_code == 400


# -- the graph index is one of the views ----------------------------------------------------


def _written_elsewhere(db_url: str) -> int:
    """A write by another process (an engine, so an index, of its own): its position."""
    other = Store(db_url)
    try:
        event = run_event(
            (NS, "report"),
            run_id="33333333-0000-4000-8000-000000000003",
            inputs=[ds(NS, "totals")],
            outputs=[ds(NS, "summary")],
        )
        written = ingest_documents(other, [event], batch=False).position
    finally:
        other.dispose()
    assert written is not None
    return written


def test_a_read_naming_a_position_waits_until_the_index_applied_it(
    app_client: TestClient, db_url: str
) -> None:
    at = _post(app_client)
    index = index_of(app_client.app.state.store.engine)  # type: ignore[attr-defined]
    assert app_client.get(READS[1]).status_code == 200
    assert index.position == at
    later = _written_elsewhere(db_url)
    assert later > at
    # The tag list reads no lineage, yet it names the later position: it is answered only
    # once this server's index includes that write, not only its database.
    assert app_client.get("/api/v1/tags", params={"after": later}).status_code == 200
    assert index.position == later


@pytest.fixture
def held_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The index's loads wait for the event (set at the end whatever happens)."""
    release = threading.Event()
    real_load = index_module.load

    def held(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(index_module, "load", held)
    yield release
    release.set()


def test_a_read_naming_a_position_is_not_answered_while_the_index_loads(
    db_url: str, held_load: threading.Event
) -> None:
    settings = Settings(db_url=db_url, position_wait=0.2)
    with TestClient(create_app(settings, migrate=False)) as client:
        at = _post(client)
        waiting = client.get("/api/v1/tags", params={"after": at})
        assert waiting.status_code == 503
        assert waiting.headers["Retry-After"] == "1"
        assert f"includes position 0, not yet {at}" in waiting.json()["message"]
        assert client.get("/api/v1/tags").status_code == 200  # naming none, it need not wait

        held_load.set()  # once the load is done (it may take longer than the read's wait)
        index = index_of(client.app.state.store.engine)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30
        while not index.loaded and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/api/v1/tags", params={"after": at}).status_code == 200
        assert index.position == at
