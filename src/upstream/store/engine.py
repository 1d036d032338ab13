"""Engine set-up per dialect, and the transaction boundaries the services use.

SQLite: WAL (readers never block the writer), foreign keys on, `synchronous=FULL` so an
acknowledged commit survives a crash, and write transactions begin IMMEDIATE so two writers
queue on the lock instead of failing mid-transaction. PostgreSQL: a connection pool per
process; stateless otherwise, so any number of processes can share one database.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

T = TypeVar("T")

_WRITE = "upstream_write"
#: PostgreSQL SQLSTATEs worth retrying: serialization failure, deadlock.
_RETRYABLE_PG = {"40001", "40P01"}


class Store:
    """The database handle every service asks for."""

    def __init__(self, url: str, *, pool_size: int = 5, echo: bool = False) -> None:
        self.url = sa.make_url(url)
        self.engine = create_engine(url, pool_size=pool_size, echo=echo)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def display_url(self) -> str:
        """The URL without a password, fit for logs and /health."""
        return self.url.render_as_string(hide_password=True)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction: one consistent snapshot for a whole query.

        PostgreSQL's default READ COMMITTED takes a new snapshot per statement, so a query of
        several statements could see half of a concurrent write; REPEATABLE READ holds one
        snapshot for the transaction (and a read-only one never fails to serialize). SQLite's
        read transaction is a snapshot already."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            with conn.begin():
                yield conn

    def write(self, work: Callable[[Connection], T], *, attempts: int = 5) -> T:
        """Run `work` in one write transaction, retried on deadlocks and lock time-outs.

        `work` must be safe to repeat: it sees a fresh transaction each attempt.
        """
        for attempt in range(1, attempts + 1):
            try:
                with self.engine.connect() as plain:
                    conn = plain.execution_options(**{_WRITE: True})
                    with conn.begin():
                        return work(conn)
            except DBAPIError as exc:
                if attempt == attempts or not _retryable(exc):
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    def dispose(self) -> None:
        self.engine.dispose()


def _retryable(exc: DBAPIError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_PG:
        return True
    return isinstance(exc, OperationalError) and "database is locked" in str(exc.orig)


def create_engine(url: str, *, pool_size: int = 5, echo: bool = False) -> Engine:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, echo)
    kwargs: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": pool_size,
        "pool_pre_ping": True,
    }
    return sa.create_engine(parsed, echo=echo, **kwargs)


def _sqlite_engine(url: sa.URL, echo: bool) -> Engine:
    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, echo=echo, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module so BEGIN is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine
