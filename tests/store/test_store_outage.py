"""Which database errors are an outage (wait and try again) and which the data causes
(refuse the message): real errors from SQLite and PostgreSQL, not hand-made ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from tests.kafka_support import free_port
from upstream.model.errors import StoreUnavailable
from upstream.store.engine import Store
from upstream.store.outage import is_database_outage


def error_of(engine: sa.Engine, statement: str) -> DBAPIError:
    with pytest.raises(DBAPIError) as raised, engine.begin() as conn:
        conn.execute(sa.text(statement))
    return raised.value


def test_a_server_nobody_listens_on_is_an_outage() -> None:
    engine = sa.create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/x")
    try:
        assert is_database_outage(error_of(engine, "SELECT 1"))
    finally:
        engine.dispose()


def test_a_locked_sqlite_database_is_an_outage(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    other = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("CREATE TABLE t (x INTEGER)")
        assert is_database_outage(error_of(other, "CREATE TABLE u (x INTEGER)"))
    finally:
        holder.close()
        other.dispose()


@pytest.mark.parametrize(
    "statement",
    ["SELECT nonsense FROM", "SELECT 1/0", "SELECT CAST('x' AS INTEGER)"],
    ids=["syntax", "division", "cast"],
)
def test_an_error_of_the_statement_is_no_outage(postgres_server: str, statement: str) -> None:
    engine = sa.create_engine(postgres_server)
    try:
        assert not is_database_outage(error_of(engine, statement))
    finally:
        engine.dispose()


def test_other_exceptions_are_no_outage() -> None:
    assert not is_database_outage(ValueError("bad"))
    assert is_database_outage(sa.exc.TimeoutError("QueuePool limit reached"))


#: Ends the statement's own server process, as a crash or an immediate shutdown does.
_CUT_OWN_CONNECTION = "SELECT pg_terminate_backend(pg_backend_pid())"


@pytest.mark.postgres
def test_a_connection_cut_inside_a_write_is_unavailable_and_the_store_recovers(
    postgres_server: str,
) -> None:
    """A server process that dies inside a transaction is an outage (503), never
    `PendingRollbackError`, and the next transaction gets a working connection."""
    store = Store(postgres_server)
    try:
        with pytest.raises(StoreUnavailable) as raised:
            store.write(lambda conn: conn.execute(sa.text(_CUT_OWN_CONNECTION)))
        assert isinstance(raised.value.__cause__, sa.exc.OperationalError)
        with pytest.raises(StoreUnavailable), store.read() as conn:
            conn.execute(sa.text(_CUT_OWN_CONNECTION))
        assert store.write(lambda conn: conn.execute(sa.text("SELECT 1")).scalar()) == 1
    finally:
        store.dispose()


@pytest.mark.postgres
def test_a_value_past_the_databases_limits_is_no_outage(postgres_server: str) -> None:
    """SQLSTATE 54000 (program limit exceeded) is an OperationalError, but the data causes
    it: a retry would fail the same way, so it is not `StoreUnavailable` (503)."""
    store = Store(postgres_server)
    try:
        with pytest.raises(sa.exc.OperationalError) as raised:
            store.write(lambda conn: conn.execute(sa.text("SELECT repeat('x', 2000000000)")))
        assert getattr(raised.value.orig, "sqlstate", None) == "54000"
        assert not is_database_outage(raised.value)
    finally:
        store.dispose()


@pytest.mark.postgres
def test_a_lock_wait_over_its_timeout_is_an_outage(postgres_server: str) -> None:
    """The holder of the lock, not the data, is in the way: the write waits and retries."""
    engine = sa.create_engine(postgres_server)
    try:
        with engine.connect() as holder, engine.connect() as waiter:
            holder.execute(sa.text("SELECT pg_advisory_lock(3401)"))
            waiter.execute(sa.text("SET lock_timeout = 100"))
            with pytest.raises(DBAPIError) as raised:
                waiter.execute(sa.text("SELECT pg_advisory_lock(3401)"))
            assert getattr(raised.value.orig, "sqlstate", None) == "55P03"
            assert is_database_outage(raised.value)
            holder.execute(sa.text("SELECT pg_advisory_unlock(3401)"))
    finally:
        engine.dispose()
