"""A PostgreSQL read's exchanges with the server: BEGIN, its statements, COMMIT, and nothing
else (each is a round trip every lineage answer waits for); and a pooled connection the
server dropped still costs the read nothing but a new connection."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from psycopg import pq

from tests.conftest import end_other_connections
from upstream.store.change_log import position
from upstream.store.engine import Store

pytestmark = pytest.mark.postgres


@contextmanager
def traced(store: Store, path: Path) -> Iterator[None]:
    """Trace, into `path`, what libpq sends and receives on the pool's one connection."""
    with store.read() as conn:  # the connection is made and pooled
        conn.execute(sa.text("SELECT 1"))
    assert _pooled(store) == 1
    raw = store.engine.raw_connection()
    pgconn = raw.dbapi_connection.pgconn  # type: ignore[union-attr]
    raw.close()
    with path.open("w") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield
        finally:
            pgconn.untrace()


def exchanges(path: Path) -> list[str]:
    """Each request the client sent that waits for the server to be ready again (a simple
    query, or a Sync ending an extended one), named by its first word: a round trip each."""
    found: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        simple = re.match(r'F\t\d+\tQuery\t "([^\s";]*)', line)
        if simple:
            found.append(simple.group(1) or ";")
        parsed = re.match(r'F\t\d+\tParse\t "[^"]*" "(\S+)', line)
        if parsed:
            pending = parsed.group(1)
        if re.match(r"F\t\d+\tSync", line):
            found.append(pending or "?")
            pending = ""
    return found


def test_a_read_is_its_begin_its_statement_and_its_commit(
    postgres_server: str, tmp_path: Path
) -> None:
    """No check of the pooled connection before the read: its BEGIN is the check."""
    store = Store(postgres_server, pool_size=1)
    try:
        with traced(store, tmp_path / "trace"):
            for _ in range(2):
                with store.read() as conn:
                    position(conn)
        assert exchanges(tmp_path / "trace") == ["BEGIN", "SELECT", "COMMIT"] * 2
    finally:
        store.dispose()


def test_a_read_sees_one_snapshot_and_cannot_write(postgres_server: str) -> None:
    """The BEGIN the read sends itself holds what psycopg's did: REPEATABLE READ, read-only."""
    store = Store(postgres_server)
    try:
        with store.read() as conn:
            assert conn.execute(sa.text("SHOW transaction_isolation")).scalar() == (
                "repeatable read"
            )
            assert conn.execute(sa.text("SHOW transaction_read_only")).scalar() == "on"
        with store.read() as conn:
            snapshot = conn.execute(sa.text("SELECT pg_current_snapshot()::text")).scalar()
            store.write(lambda w: w.execute(sa.text("SELECT txid_current()")))
            again = conn.execute(sa.text("SELECT pg_current_snapshot()::text")).scalar()
            assert again == snapshot
    finally:
        store.dispose()


def test_reads_after_the_server_dropped_every_pooled_connection_are_answered(
    postgres_server: str,
) -> None:
    """As after a restart of the server: each pooled connection is dead, and every read
    is still answered, on new connections, without an error."""
    store = Store(postgres_server, pool_size=3)
    try:
        with ExitStack() as held:  # three connections in the pool
            for _ in range(3):
                held.enter_context(store.read()).execute(sa.text("SELECT 1"))
        assert _pooled(store) == 3
        with store.read() as conn:
            pids = {conn.execute(sa.text("SELECT pg_backend_pid()")).scalar()}
        end_other_connections(postgres_server)
        for _ in range(4):
            with store.read() as conn:
                assert conn.execute(sa.text("SELECT 1")).scalar() == 1
                pids.add(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar())
        assert len(pids) > 1
    finally:
        store.dispose()


def _pooled(store: Store) -> int:
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    return pool.checkedin()


def test_a_read_of_one_statement_is_that_statement_alone(
    postgres_server: str, tmp_path: Path
) -> None:
    """`read_once`: a read whose work makes one statement is one round trip, no BEGIN, no
    COMMIT, and it still checks the pooled connection (no ping before it)."""
    store = Store(postgres_server, pool_size=1)
    try:
        with traced(store, tmp_path / "trace"):
            found = [store.read_once(position) for _ in range(2)]
        assert exchanges(tmp_path / "trace") == ["SELECT"] * 2
        assert found[0] == found[1]
    finally:
        store.dispose()


def test_a_read_of_two_statements_starts_again_in_a_transaction(
    postgres_server: str, tmp_path: Path
) -> None:
    """The second statement of a `read_once` would see a snapshot of its own: the work runs
    again, whole, in a read transaction, where both statements see one snapshot."""
    store = Store(postgres_server, pool_size=1)
    runs: list[str] = []

    def twice(conn: sa.Connection) -> tuple[str, str]:
        runs.append("run")
        first = conn.execute(sa.text("SELECT pg_current_snapshot()::text")).scalar_one()
        return first, conn.execute(sa.text("SELECT pg_current_snapshot()::text")).scalar_one()

    try:
        with traced(store, tmp_path / "trace"):
            first, second = store.read_once(twice)
        assert exchanges(tmp_path / "trace") == ["SELECT", "BEGIN", "SELECT", "SELECT", "COMMIT"]
        assert (first, runs) == (second, ["run", "run"])
    finally:
        store.dispose()


def test_a_read_of_one_statement_cannot_write(postgres_server: str, tmp_path: Path) -> None:
    """Outside a transaction nothing makes a statement read-only: one that is no SELECT is
    sent in the read's read-only transaction, which refuses a write."""
    store = Store(postgres_server, pool_size=1)
    try:
        with pytest.raises(sa.exc.InternalError, match="read-only transaction"):
            store.read_once(lambda conn: conn.execute(sa.text("CREATE TABLE q31_never (x int)")))
        with traced(store, tmp_path / "trace"):
            store.read_once(lambda conn: conn.execute(sa.text("SHOW transaction_read_only")))
        assert exchanges(tmp_path / "trace") == ["BEGIN", "SHOW", "COMMIT"]
    finally:
        store.dispose()


def test_one_statement_reads_after_the_server_dropped_every_pooled_connection(
    postgres_server: str,
) -> None:
    """A `read_once` on a pooled connection the server dropped begins again on a new one."""
    store = Store(postgres_server, pool_size=3)
    try:
        with ExitStack() as held:  # three connections in the pool
            for _ in range(3):
                held.enter_context(store.read()).execute(sa.text("SELECT 1"))
        end_other_connections(postgres_server)
        for _ in range(4):
            assert store.read_once(lambda c: c.execute(sa.text("SELECT 1")).scalar()) == 1
    finally:
        store.dispose()
