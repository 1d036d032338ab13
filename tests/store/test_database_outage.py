"""A database that hangs, refuses or is slow gets every client a quick answer (design §5):
503 with `Retry-After` for work that needs it, `/health` at once, `/ready` 503 within 2 s,
recovery without a restart, and nothing acknowledged lost.

The hung PostgreSQL is a TCP proxy the test controls (tests/tcp_proxy.py) between the server
and the shared PostgreSQL, which is never stopped: other sessions' tests use it. On SQLite the
counterpart of a hung database is another process holding its write lock.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.conftest import LiveServer, truncate_tables
from tests.readback import stored_run_ids
from tests.tcp_proxy import TcpProxy, proxy_to
from upstream.api.app import create_app
from upstream.model.errors import StoreUnavailable
from upstream.settings import Settings
from upstream.store.engine import Store, Timeouts

UNAVAILABLE = {
    "code": 503,
    "message": "the database is unavailable; retry later (re-sending events is safe)",
}
#: Small timeouts, so the outage is over quickly; the bounds below follow from them.
TIMEOUTS = {
    "UPSTREAM_DB_CONNECT_TIMEOUT": "2",
    "UPSTREAM_DB_POOL_TIMEOUT": "1",
    "UPSTREAM_DB_STATEMENT_TIMEOUT": "2",
    "UPSTREAM_DB_LOCK_TIMEOUT": "1",
}
#: The longest any request may wait while the database hangs: a statement in flight is given
#: the statement timeout plus 5 s, then a fresh connection the connect timeout (2 + 5 + 2 s),
#: with room for a loaded machine.
ANSWER_BOUND = 20.0


def _event(tag: str) -> dict[str, Any]:
    return run_event(("outage", tag), run_id=str(uuid.uuid4()), outputs=[ds("outage", tag)])


def _timed(call: Any) -> tuple[int, float, httpx.Headers]:
    started = time.monotonic()
    response = call()
    return response.status_code, time.monotonic() - started, response.headers


@pytest.fixture
def proxied_server(postgres_server: str, tmp_path: Path) -> Iterator[tuple[LiveServer, TcpProxy]]:
    """A live server whose PostgreSQL is reached through a proxy the test controls."""
    truncate_tables(postgres_server)
    real = sa.make_url(postgres_server)
    with proxy_to(real.host or "127.0.0.1", real.port or 5432) as proxy:
        url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        server = LiveServer(url, tmp_path, env=TIMEOUTS).start()
        try:
            yield server, proxy
        finally:
            proxy.resume()
            server.stop()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_hung_postgresql_gets_503s_in_time_and_recovers(
    proxied_server: tuple[LiveServer, TcpProxy], postgres_server: str
) -> None:
    server, proxy = proxied_server
    acknowledged: list[str] = []
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for i in range(5):
            event = _event(f"before-{i}")
            assert http.post("/api/v1/lineage", json=event).status_code == 201
            acknowledged.append(event["run"]["runId"])
        assert http.get("/api/v1/namespaces").status_code == 200  # the pool is warm

        proxy.pause()
        reads = [lambda: http.get("/api/v1/namespaces/outage/datasets")] * 24
        posts = [
            lambda i=i: http.post("/api/v1/lineage", json=_event(f"during-{i}")) for i in range(8)
        ]
        with ThreadPoolExecutor(len(reads) + len(posts)) as pool:
            answers = list(pool.map(_timed, reads + posts))
            # While those wait: liveness at once, readiness refused within its bound.
            for _ in range(3):
                assert httpx.get(f"{server.url}/health", timeout=1).status_code == 200
                ready = httpx.get(f"{server.url}/ready", timeout=2)
                assert ready.status_code == 503
                assert ready.json() == {
                    "status": "unavailable",
                    "reason": "the database does not answer",
                }
        statuses = sorted({status for status, _, _ in answers})
        assert statuses == [503], answers
        assert all(headers["retry-after"] == "5" for _, _, headers in answers)
        assert max(seconds for _, seconds, _ in answers) < ANSWER_BOUND
        response = http.get("/api/v1/namespaces")
        assert (response.status_code, response.json()) == (503, UNAVAILABLE)

        proxy.resume()
        deadline = time.monotonic() + 60
        after = _event("after")
        while (status := http.post("/api/v1/lineage", json=after).status_code) != 201:
            assert status == 503
            assert time.monotonic() < deadline, "no recovery within 60 s of the database's return"
            time.sleep(0.5)
        acknowledged.append(after["run"]["runId"])
        assert http.get("/ready").status_code == 200
        assert http.get("/api/v1/namespaces/outage/datasets").status_code == 200
    assert set(acknowledged) <= stored_run_ids(postgres_server)
    assert "Traceback" not in server.log()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_postgresql_that_refuses_connections_gets_503s(
    proxied_server: tuple[LiveServer, TcpProxy],
) -> None:
    server, proxy = proxied_server
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/api/v1/lineage", json=_event("before")).status_code == 201
        proxy.refuse()
        for call in (
            lambda: http.post("/api/v1/lineage", json=_event("during")),
            lambda: http.get("/api/v1/namespaces"),
        ):
            status, seconds, headers = _timed(call)
            assert (status, headers["retry-after"]) == (503, "5")
            assert seconds < ANSWER_BOUND
        assert httpx.get(f"{server.url}/health", timeout=1).status_code == 200
        proxy.resume()
        deadline = time.monotonic() + 60
        while http.get("/api/v1/namespaces").status_code != 200:
            assert time.monotonic() < deadline, "no recovery within 60 s"
            time.sleep(0.5)


def test_a_locked_sqlite_gets_503_and_recovers(tmp_path: Path, sqlite_template: Path) -> None:
    """Another process holds the write lock past the lock timeout: 503, then 201 once it
    lets go; the event refused meanwhile was not stored, the one acknowledged after was."""
    path = tmp_path / "locked.db"
    path.write_bytes(sqlite_template.read_bytes())
    settings = Settings(db_url=f"sqlite:///{path}", db_lock_timeout=0.5)
    holder = sqlite3.connect(path, isolation_level=None)
    with TestClient(create_app(settings, migrate=False)) as client:
        holder.execute("BEGIN IMMEDIATE")
        refused = _event("locked")
        response = client.post("/api/v1/lineage", json=refused)
        assert (response.status_code, response.json()) == (503, UNAVAILABLE)
        assert response.headers["retry-after"] == "5"
        assert client.get("/health").status_code == 200
        assert client.get("/api/v1/namespaces").status_code == 200  # readers never wait (WAL)
        holder.execute("ROLLBACK")
        accepted = _event("unlocked")
        assert client.post("/api/v1/lineage", json=accepted).status_code == 201
    holder.close()
    assert stored_run_ids(settings.db_url) == {accepted["run"]["runId"]}


#: A statement that runs for seconds on either database.
SLOW_QUERY = {
    "postgresql": "SELECT pg_sleep(10)",
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
    "SELECT count(*) FROM n",
}


def test_a_statement_over_the_statement_timeout_is_unavailable(db_url: str) -> None:
    store = Store(db_url, timeouts=Timeouts(statement=0.3))
    try:
        with pytest.raises(StoreUnavailable), store.read() as conn:
            conn.execute(sa.text(SLOW_QUERY[store.dialect]))
        with store.read() as conn:  # the connection (or its replacement) works again
            assert conn.execute(sa.text("SELECT 1")).scalar() == 1
    finally:
        store.dispose()


#: A statement that runs for about a second or more on either database, then ends.
SECONDS_LONG_QUERY = {
    "postgresql": "SELECT 1 FROM pg_sleep(1.5)",
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000000) "
    "SELECT 1 FROM n WHERE i = 4000000",
}


def test_a_long_read_is_held_to_no_deadline(db_url: str) -> None:
    """The same statement that a read gives up on at the 0.3 s statement timeout runs to
    its end in a long read (an index load at a server's start, a command run by hand)."""
    store = Store(db_url, timeouts=Timeouts(statement=0.3))
    try:
        with pytest.raises(StoreUnavailable), store.read() as conn:
            conn.execute(sa.text(SECONDS_LONG_QUERY[store.dialect]))
        with store.read(long=True) as conn:
            assert conn.execute(sa.text(SECONDS_LONG_QUERY[store.dialect])).scalar() == 1
        with pytest.raises(StoreUnavailable), store.read() as conn:  # bounded again
            conn.execute(sa.text(SECONDS_LONG_QUERY[store.dialect]))
    finally:
        store.dispose()


def test_a_full_pool_is_unavailable_not_an_error(db_url: str) -> None:
    """`QueuePool limit … reached` is no OperationalError; it is a 503 all the same."""
    store = Store(db_url, pool_size=1, timeouts=Timeouts(pool=0.2))
    holders = []
    try:
        while len(holders) < 50:  # PostgreSQL: 1 + 1 overflow; SQLite: SQLAlchemy's 5 + 10
            try:
                holders.append(store.engine.connect())
            except sa.exc.TimeoutError:
                break
        assert len(holders) == (2 if store.dialect == "postgresql" else 15)
        with pytest.raises(StoreUnavailable), store.read():
            pass
    finally:
        for conn in holders:
            conn.close()
        store.dispose()


def test_the_timeouts_reach_every_session(db_url: str) -> None:
    store = Store(db_url, timeouts=Timeouts(statement=12.5, lock=3))
    try:
        with store.read() as conn:
            if store.dialect == "postgresql":
                shown = conn.execute(sa.text("SHOW statement_timeout")).scalar()
                assert (shown, conn.execute(sa.text("SHOW lock_timeout")).scalar()) == (
                    "12500ms",
                    "3s",
                )
            else:
                assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 3000
    finally:
        store.dispose()


@pytest.mark.postgres
def test_options_given_in_the_url_are_kept(postgres_server: str) -> None:
    url = sa.make_url(postgres_server).update_query_dict(
        {"options": "-c application_name=lineage-test", "connect_timeout": "3"}
    )
    store = Store(url.render_as_string(hide_password=False))
    try:
        with store.read() as conn:
            assert conn.execute(sa.text("SHOW application_name")).scalar() == "lineage-test"
            assert conn.execute(sa.text("SHOW statement_timeout")).scalar() == "30s"
    finally:
        store.dispose()


def test_an_in_memory_sqlite_store_still_works() -> None:
    store = Store("sqlite://")
    try:
        with store.read() as conn:
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        store.dispose()


@pytest.mark.postgres
def test_jit_is_off_unless_the_url_turns_it_on(postgres_server: str) -> None:
    """A walk's estimated cost passes `jit_above_cost`, and compiling costs more than the
    statement; a URL's own `-c jit=on` still wins, since it comes later."""
    plain = Store(postgres_server)
    url = sa.make_url(postgres_server).update_query_dict({"options": "-c jit=on"})
    asked = Store(url.render_as_string(hide_password=False))
    try:
        with plain.read() as conn:
            assert conn.execute(sa.text("SHOW jit")).scalar() == "off"
        with asked.read() as conn:
            assert conn.execute(sa.text("SHOW jit")).scalar() == "on"
    finally:
        plain.dispose()
        asked.dispose()
