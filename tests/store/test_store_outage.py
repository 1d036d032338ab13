"""Which database errors are an outage (wait and try again) and which the data causes
(refuse the message): real errors from SQLite and PostgreSQL, not hand-made ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from tests.kafka_support import free_port
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
