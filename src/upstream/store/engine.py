"""Engine set-up per dialect, and the transaction boundaries the services use.

SQLite: WAL (readers never block the writer), foreign keys on, `synchronous=FULL` so an
acknowledged commit survives a crash, and write transactions begin IMMEDIATE so two writers
queue on the lock instead of failing mid-transaction. PostgreSQL: a connection pool per
process; stateless otherwise, so any number of processes can share one database.

Every wait is bounded (`Timeouts`): connecting, waiting for a pooled connection, waiting for a
lock, running a statement, and — enforced by the client, for a database that stopped answering
altogether — waiting for any answer (`deadlines.Watchdog`). Failures worth a retry leave
`read` and `write` as `StoreUnavailable` (`outage`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as TimeoutError_

from upstream.model.json_text import dumps, parse
from upstream.store.change_log import append_recorded, position
from upstream.store.deadlines import OperationClock, SqliteStatementClock, Watchdog
from upstream.store.dialect import uuid_text
from upstream.store.outage import OutageBreaker, outage_guard
from upstream.store.replicas import (
    Fallback,
    Replica,
    ReplicaSet,
    includes_wanted,
)
from upstream.store.transaction_state import actions_after_commit

T = TypeVar("T")

_WRITE = "upstream_write"
#: Execution option of a read's connection (`Store.read`): one snapshot, which no statement
#: of it changes, so what it has read once holds for the rest of it (`is_snapshot`).
_SNAPSHOT = "upstream_snapshot"
#: Execution option of a connection whose statements may run as long as they need (migrations).
UNBOUNDED = "upstream_unbounded"
#: Execution option of a PostgreSQL read's BEGIN (`Store._snapshot`): the first exchange on a
#: connection taken from the pool, so it is bounded as the pool's check of a connection is.
_FIRST = "upstream_first_exchange"
#: Set while a PostgreSQL read takes a connection from the pool: the read's own BEGIN finds a
#: connection the server dropped, so the pool does not ask the server first (`_ping`).
_CHECKED_BY_BEGIN: ContextVar[bool] = ContextVar("upstream_checked_by_begin", default=False)
#: Execution option of a PostgreSQL read outside a transaction (`Store.read_once`): the list
#: of the statements it has made, at most one, since that one's snapshot is the read's.
_ONE_STATEMENT = "upstream_one_statement"
#: Connections a PostgreSQL read tries before it gives up, as the pool's checkout does.
_BEGIN_ATTEMPTS = 3
#: What a PostgreSQL read sends first (see `Store.read`).
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
#: Seconds the client waits beyond the server's statement timeout before it gives up on one
#: statement of a long transaction (a rebuild's), so a working server's own timeout (a clear
#: error) comes first.
_ANSWER_GRACE = 5.0
#: psycopg waits at least this long for a connection, whatever `connect_timeout` says.
_SHORTEST_CONNECT = 2


@dataclass(frozen=True)
class Timeouts:
    """How long database work may wait, in seconds (the `db_*_timeout` settings)."""

    connect: float = 5.0
    pool: float = 5.0
    statement: float = 30.0
    lock: float = 10.0


#: PostgreSQL SQLSTATEs worth retrying: serialization failure, deadlock.
_RETRYABLE_PG = {"40001", "40P01"}
#: Compress what the session stores out of line (event payloads, large facets) with LZ4 when
#: the server has it (PostgreSQL 14 and later, built with lz4): about a third of the CPU of
#: the default pglz, which spent 0.1 ms of each 14 kB event, for 12 % more space. Values are
#: read back the same whatever compressed them; servers without LZ4 keep pglz.
_LZ4 = (
    "SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings "
    "WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
)


class Store:
    """The database handle every service asks for."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 5,
        timeouts: Timeouts = Timeouts(),
        echo: bool = False,
    ) -> None:
        self.url = sa.make_url(url)
        self.pool_size = pool_size
        self.timeouts = timeouts
        #: The read replicas, once `read_from_replicas` named some.
        self.replicas: ReplicaSet | None = None
        #: Watches the connections that measure the replicas' lag.
        self._probe_watchdog = Watchdog()
        self.watchdog = Watchdog()
        self.breaker = OutageBreaker()
        self.clock = OperationClock(timeouts.statement)
        #: Writes of this process under way (`writing`), from when their events arrive.
        self._writes = 0
        self._writes_lock = threading.Lock()
        #: Threads `in_background` started.
        self._background: list[threading.Thread] = []
        self._background_lock = threading.Lock()
        self.engine = create_engine(
            url,
            pool_size=pool_size,
            timeouts=timeouts,
            watchdog=self.watchdog,
            clock=self.clock,
            echo=echo,
        )

    @property
    def answer_within(self) -> float:
        """The time one read or write (`read`, `write`) has for its database work as a whole
        (the statement timeout): waiting for a pooled connection, checking it, opening a new
        one and every statement. Only a connection opened in its last two seconds may take up
        to two seconds more (psycopg waits that long at least)."""
        return self.clock.seconds

    @property
    def writing(self) -> bool:
        """Whether a write of this process is under way (`taking_write`, or a write
        transaction): work that can wait (the watcher's rounds) lets it have the process's
        CPU first."""
        return self._writes > 0

    @contextmanager
    def taking_write(self) -> Iterator[None]:
        """Count a write as under way for `writing` from when its events arrive: decoding
        and preparing posted events takes more of the process's CPU than storing them."""
        with self._writes_lock:
            self._writes += 1
        try:
            yield
        finally:
            with self._writes_lock:
                self._writes -= 1

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def display_url(self) -> str:
        """The URL without a password, fit for logs and /health."""
        return self.url.render_as_string(hide_password=True)

    @contextmanager
    def read(self, *, primary: bool = False, long: bool = False) -> Iterator[Connection]:
        """A read-only transaction: one consistent snapshot for a whole query, on a read
        replica when the store has one close enough behind (`read_from_replicas`), else on
        the primary — always there with `primary`. A `long` read has no deadline, neither
        the request's nor a statement's: loading a large store's index at a server's start,
        or a command run by hand, may take minutes, and failing it would only start it over.

        PostgreSQL's default READ COMMITTED takes a new snapshot per statement, so a query of
        several statements could see half of a concurrent write; REPEATABLE READ holds one
        snapshot for the transaction (and a read-only one never fails to serialize). SQLite's
        read transaction is a snapshot already."""
        replica = None if primary else self._replica_for_reads()
        with self._guarded(replica, long), self._snapshot(replica or self.engine, long) as conn:
            # The position the request's read names, else the primary's snapshot.
            if replica is None or includes_wanted(conn):
                yield conn
                return
        with self._guarded(None, long), self._snapshot(self.engine, long) as conn:
            yield conn

    def read_once(self, work: Callable[[Connection], T]) -> T:
        """`work(conn)` on one snapshot, as in `read`, for work whose database part is
        mostly one statement (a lineage walk on the graph index: its start's lookup).
        Reading the primary, `work` runs first on a connection outside any transaction for
        as long as it makes one statement: a single statement sees one snapshot, so on
        PostgreSQL the read is that one round trip where BEGIN, the statement and COMMIT
        made three (and on SQLite it skips their two trips through SQLAlchemy). Should
        `work` make a second statement, or the first find the pooled connection dropped
        (it checks the connection, as `read`'s BEGIN does), `work` runs again, whole, in a
        `read` transaction, within the same deadline: it must change nothing, as a read
        does not. On replicas it is `read`."""
        if self._replica_for_reads() is not None:
            with self.read() as conn:
                return work(conn)
        with self._guarded(None):
            try:
                with _one_statement(self.engine) as conn:
                    return work(conn)
            except SecondStatement:
                pass
            except DBAPIError as exc:
                if not exc.connection_invalidated:
                    raise
            with self._snapshot(self.engine) as conn:
                return work(conn)

    def read_position(self, *, primary: bool = False) -> int:
        """The newest position reads see now: the primary's, or the replica's they use
        (always the primary's with `primary`). On PostgreSQL one statement outside a
        transaction, its own snapshot: a read that names a position asks this again and
        again while its replica catches up, and a read-only transaction around it was two
        round trips more (BEGIN, ROLLBACK)."""
        replica = None if primary else self._replica_for_reads()
        if self.dialect != "postgresql":
            with self._guarded(replica), self._snapshot(replica or self.engine) as conn:
                return position(conn)
        with self._guarded(replica), (replica or self.engine).connect() as plain:
            return position(plain.execution_options(isolation_level="AUTOCOMMIT"))

    def read_from_replicas(
        self,
        urls: Sequence[str],
        max_lag: float,
        fallback: Fallback,
        probe_seconds: float,
    ) -> ReplicaSet:
        """Send reads to these PostgreSQL replicas of the primary from now on, tried in
        order, skipping one that lags more than `max_lag` seconds (see `replicas`). Writes,
        migrations and locks stay on the primary, so a server migrates before it calls
        this. A lag measurement waits `probe_seconds` for each server to answer."""
        watchdog = self._probe_watchdog
        replicas = [
            Replica(
                sa.make_url(url).render_as_string(hide_password=True),
                create_engine(
                    url,
                    pool_size=self.pool_size,
                    timeouts=self.timeouts,
                    watchdog=self.watchdog,
                    clock=self.clock,
                ),
                probe_engine(url, probe_seconds, watchdog),
            )
            for url in urls
        ]
        primary_probe = probe_engine(
            self.url.render_as_string(hide_password=False), probe_seconds, watchdog
        )
        self.replicas = ReplicaSet(
            replicas, primary_probe, max_lag=max_lag, fallback=fallback, probe_seconds=probe_seconds
        )
        return self.replicas

    def _replica_for_reads(self) -> Engine | None:
        return None if self.replicas is None else self.replicas.engine_for_reads()

    @contextmanager
    def _guarded(self, replica: Engine | None, long: bool = False) -> Iterator[None]:
        """A read's bounds and outage handling; a replica's failure is not the primary's,
        so it leaves the outage breaker (which writes consult too) alone."""
        breaker = self.breaker.attempt() if replica is None else nullcontext()
        timed = nullcontext() if long else self.clock.running()
        with breaker, outage_guard(), timed:
            yield

    @contextmanager
    def _snapshot(self, engine: Engine, long: bool = False) -> Iterator[Connection]:
        if self.dialect != "postgresql":
            with engine.connect() as conn:
                conn.execution_options(**{_SNAPSHOT: True, UNBOUNDED: long})
                with conn.begin():
                    yield conn
            return
        with _begun_read(engine) as conn:
            conn.execution_options(**{_SNAPSHOT: True, UNBOUNDED: long})
            if long:
                conn.execute(sa.text("SET LOCAL statement_timeout = 0"))
            yield conn
            conn.commit()

    def write(self, work: Callable[[Connection], T], *, attempts: int = 5, long: bool = False) -> T:
        """Run `work` in one write transaction, retried on deadlocks and lock time-outs,
        within `answer_within` seconds in all; a `long` transaction (a rebuild's batch) has
        each statement bounded instead.

        `work` must be safe to repeat: it sees a fresh transaction each attempt. What it
        recorded in the change log is appended as the transaction's last step.
        """
        return self.write_at(work, attempts=attempts, long=long)[0]

    def write_at(
        self, work: Callable[[Connection], T], *, attempts: int = 5, long: bool = False
    ) -> tuple[T, int]:
        """`write`, and the change-log position a read must include to see what it wrote:
        the position it appended at, or, when it changed nothing, the newest committed one
        (what it found stored was committed at or before that)."""
        timed = nullcontext() if long else self.clock.running()
        with self.taking_write(), self.breaker.attempt(), outage_guard(), timed:
            return self._write(work, attempts)

    def _write(self, work: Callable[[Connection], T], attempts: int) -> tuple[T, int]:
        for attempt in range(1, attempts + 1):
            try:
                with self.engine.connect() as plain:
                    conn = plain.execution_options(**{_WRITE: True})
                    with conn.begin():
                        result = work(conn)
                        # Last: see upstream.store.change_log.
                        at = append_recorded(conn)
                        written = result, position(conn) if at is None else at
                        then = actions_after_commit(conn)
                break
            except DBAPIError as exc:
                if attempt == attempts or not _retryable(exc):
                    raise
                time.sleep(0.01 * 2**attempt)
        else:
            raise AssertionError("unreachable")
        for action in then:  # committed
            action(self)
        return written

    def in_background(self, work: Callable[[], None], name: str) -> None:
        """Run `work` on a thread of its own (work a write left for after its commit, which
        no request should wait for); `settle` and `dispose` wait for it."""
        thread = threading.Thread(target=work, name=name, daemon=True)
        with self._background_lock:
            self._background = [t for t in self._background if t.is_alive()]
            self._background.append(thread)
        thread.start()

    def settle(self, timeout: float = 60.0) -> None:
        """Wait, up to `timeout` seconds in all, for the work started `in_background`."""
        deadline = time.monotonic() + timeout
        while True:
            with self._background_lock:
                running = [t for t in self._background if t.is_alive()]
            if not running:
                return
            for thread in running:
                thread.join(max(deadline - time.monotonic(), 0.0))
            if time.monotonic() >= deadline:
                return

    def ping(self) -> None:
        """Ask the database for the smallest answer it gives: it is reachable and serving."""
        with self.read(primary=True) as conn:
            conn.execute(sa.text("SELECT 1"))

    def dispose(self) -> None:
        self.settle()
        if self.replicas is not None:
            self.replicas.close()
            for engine in self.replicas.engines:
                engine.dispose()
        self._probe_watchdog.close()
        self.engine.dispose()
        self.watchdog.close()


def _begun_read(engine: Engine) -> Connection:
    """A connection of PostgreSQL `engine` in a read-only REPEATABLE READ transaction, begun
    by a BEGIN of its own: three round trips a read (BEGIN, its statement, COMMIT) where the
    pool's check of the connection, then psycopg's BEGIN, made four. That BEGIN is the check:
    on a connection the server dropped (a restart) it fails as a disconnect, SQLAlchemy
    discards the pool's connections, and the read begins again on a new one. Nothing was
    read yet, so starting over is safe, and the snapshot is still taken by the read's first
    statement. The connection runs in autocommit so that psycopg sends no BEGIN of its own;
    its COMMIT (or ROLLBACK) still ends the transaction, the server being in one."""
    for attempt in range(1, _BEGIN_ATTEMPTS + 1):
        token = _CHECKED_BY_BEGIN.set(True)
        try:
            conn = engine.connect()
        finally:
            _CHECKED_BY_BEGIN.reset(token)
        try:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql(_BEGIN_READ, execution_options={_FIRST: True})
        except DBAPIError as exc:
            conn.close()
            if attempt == _BEGIN_ATTEMPTS or not exc.connection_invalidated:
                raise
            continue
        except BaseException:
            conn.close()
            raise
        return conn
    raise AssertionError("unreachable")


class SecondStatement(Exception):
    """A read outside a transaction (`Store.read_once`) asked for a second statement, which
    would not see its first one's snapshot, or for one that is no SELECT, which no read-only
    transaction guards: the read starts again in a transaction."""


@contextmanager
def _one_statement(engine: Engine) -> Iterator[Connection]:
    """A connection of `engine` outside any transaction for one statement, whose snapshot
    is the read's (`Store.read_once`). On PostgreSQL that statement is the connection's
    first exchange, so it is the check of the pooled connection, bounded as `_begun_read`'s
    BEGIN is; on SQLite no BEGIN is sent (`_sqlite_engine`)."""
    options: dict[str, Any] = {_SNAPSHOT: True, _ONE_STATEMENT: []}
    if engine.dialect.name != "postgresql":
        with engine.connect() as conn:
            yield conn.execution_options(**options)
        return
    token = _CHECKED_BY_BEGIN.set(True)
    try:
        conn = engine.connect()
    finally:
        _CHECKED_BY_BEGIN.reset(token)
    with conn:
        yield conn.execution_options(isolation_level="AUTOCOMMIT", **options, **{_FIRST: True})


def _one_more(options: Mapping[str, Any], statement: str) -> None:
    """Count `statement` against a read outside a transaction (`_one_statement`), if the
    execution `options` are one's: SecondStatement for its second, and for one that is no
    SELECT (a read-only transaction refuses a write; outside one nothing does)."""
    made = options.get(_ONE_STATEMENT)
    if made is not None:
        if made or not statement.startswith("SELECT"):
            raise SecondStatement("a read outside a transaction needs one")
        made.append(statement)


def is_snapshot(conn: Connection) -> bool:
    """`conn` is a read's (`Store.read`): its snapshot stays what it was for its lifetime."""
    return bool(conn.get_execution_options().get(_SNAPSHOT, False))


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names; None for another database or an in-memory one."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def lock_for_transaction(conn: Connection, key: int) -> bool:
    """Lift this transaction's statement and lock timeouts (its work may take longer than a
    request may) and take the advisory lock `key` until it ends; False when another
    transaction holds it. SQLite has one writer at a time already: always True."""
    conn.execution_options(**{UNBOUNDED: True})
    if conn.dialect.name != "postgresql":
        return True
    conn.execute(sa.text("SET LOCAL statement_timeout = 0"))
    conn.execute(sa.text("SET LOCAL lock_timeout = 0"))
    return bool(conn.execute(sa.select(sa.func.pg_try_advisory_xact_lock(key))).scalar_one())


def _retryable(exc: DBAPIError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_PG:
        return True
    return isinstance(exc, OperationalError) and "database is locked" in str(exc.orig)


def create_engine(
    url: str,
    *,
    pool_size: int = 5,
    timeouts: Timeouts = Timeouts(),
    watchdog: Watchdog | None = None,
    clock: OperationClock | None = None,
    echo: bool = False,
) -> Engine:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, timeouts, echo)
    clock = clock or OperationClock(timeouts.statement)
    return _postgresql_engine(parsed, pool_size, timeouts, watchdog or Watchdog(), clock, echo)


def probe_engine(url: str, seconds: float, watchdog: Watchdog) -> Engine:
    """A PostgreSQL engine of one connection for looks of one statement each, every one of
    which must be answered within `seconds` (a replica's lag, measured twice a second for
    as long as a server runs): each look is one round trip. It runs in autocommit (no BEGIN
    before it, no ROLLBACK after), and its connection is not pinged when taken from the pool:
    a look on a connection the server dropped fails, and is asked again on a new one
    (`replicas`)."""
    timeouts = Timeouts(seconds, seconds, seconds, seconds)
    return _postgresql_engine(
        sa.make_url(url), 1, timeouts, watchdog, OperationClock(seconds), False, probe=True
    )


def _postgresql_engine(
    url: sa.URL,
    pool_size: int,
    timeouts: Timeouts,
    watchdog: Watchdog,
    clock: OperationClock,
    echo: bool,
    *,
    probe: bool = False,
) -> Engine:
    """A pool whose every wait is bounded. `connect_timeout` in the URL, when given, wins;
    `options` in the URL are kept, the timeouts added after them.

    JIT compilation is off unless the URL's `options` turn it on: the planner's estimate for
    a recursive walk passes `jit_above_cost`, and compiling took 70 ms of a 20 ms statement;
    no statement of a lineage server runs long enough to win it back.

    The pool hands out the connection returned last: the statements a request prepared on
    it serve the next request, where a round robin over the pool prepared each of them once
    per connection.

    Each wait is the shorter of its own timeout and what is left of the operation's time
    (`deadlines.OperationClock`): waiting for a pooled connection, checking it, opening a new
    one, every statement. A `probe_engine` has none of the grace below: its looks end
    within their time, whoever ends them."""
    options = f"-c statement_timeout={_ms(timeouts.statement)} -c lock_timeout={_ms(timeouts.lock)}"
    given = url.query.get("options")
    if isinstance(given, str) and given.strip():
        options = f"{given} {options}"
    options = f"-c jit=off {options}"
    connect_args: dict[str, Any] = {"options": options}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = max(1, round(timeouts.connect))
    engine = sa.create_engine(
        url,
        echo=echo,
        json_serializer=dumps,
        json_deserializer=parse,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=min(timeouts.pool, timeouts.statement),
        pool_use_lifo=True,
        connect_args=connect_args,
        **({"isolation_level": "AUTOCOMMIT"} if probe else {}),
    )
    answer_within = timeouts.statement + (0 if probe else _ANSWER_GRACE)

    @event.listens_for(engine, "do_connect")
    def _connect_within(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        if "connect_timeout" in url.query:
            return
        left = clock.within(timeouts.connect)
        if left <= 0:
            raise TimeoutError_("the request's time for the database ran out before connecting")
        params["connect_timeout"] = max(_SHORTEST_CONNECT, math.ceil(left))

    @event.listens_for(engine, "connect")
    def _compress(dbapi_connection: Any, _record: Any) -> None:
        watchdog.arm(dbapi_connection, timeouts.connect)  # watched, as the checkout ping is
        try:
            with dbapi_connection.cursor() as cursor:
                cursor.execute(_LZ4)
            dbapi_connection.commit()  # a setting made in a transaction lasts if it commits
        finally:
            watchdog.disarm(dbapi_connection)

    def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        # The pool's own pre-ping could wait forever on a hung server; this one is watched.
        # A failed ping makes the pool replace the connection (DisconnectionError). A read
        # checks its connection with its BEGIN instead (`_begun_read`).
        if _CHECKED_BY_BEGIN.get():
            return
        watchdog.arm(dbapi_connection, clock.within(timeouts.connect))
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(f"the pooled connection is dead: {exc}") from exc
        finally:
            watchdog.disarm(dbapi_connection)

    if not probe:
        event.listen(engine, "checkout", _ping)

    def _watch(conn: Connection, first: bool = False) -> None:
        if conn.invalidated:
            # The connection was lost inside a transaction: the rollback that ends it only
            # forgets it, saying nothing to the server. Asking for the DBAPI connection would
            # raise PendingRollbackError in place of the failure being handled.
            return
        dbapi_connection = conn.connection.dbapi_connection
        if conn.get_execution_options().get(UNBOUNDED, False):
            watchdog.disarm(dbapi_connection)
        else:
            # A read's first exchange checks the pooled connection, as the ping does.
            bound = timeouts.connect if first else answer_within
            watchdog.arm(dbapi_connection, clock.within(bound))

    @event.listens_for(engine, "before_cursor_execute")
    def _watch_statement(conn: Connection, *args: Any) -> None:
        context = args[3]
        options = conn.get_execution_options() if context is None else context.execution_options
        _one_more(options, args[1])
        _watch(conn, options.get(_FIRST, False))

    # Every exchange with the server is watched: statements, and the commit or rollback that
    # ends a transaction (which stays watched until the connection is back in the pool).
    event.listen(engine, "commit", _watch)
    event.listen(engine, "rollback", _watch)

    @event.listens_for(engine, "after_cursor_execute")
    def _answered(conn: Connection, *_args: Any) -> None:
        watchdog.disarm(conn.connection.dbapi_connection)

    @event.listens_for(engine, "reset")
    def _watch_reset(dbapi_connection: Any, _record: Any, _state: Any) -> None:
        watchdog.arm(dbapi_connection, answer_within)  # the pool's rollback on return

    @event.listens_for(engine, "checkin")
    def _unwatch(dbapi_connection: Any, _record: Any) -> None:
        if dbapi_connection is not None:
            watchdog.disarm(dbapi_connection)

    @event.listens_for(engine, "invalidate")
    def _forget(dbapi_connection: Any, _record: Any, _exc: Any) -> None:
        if dbapi_connection is not None:
            watchdog.disarm(dbapi_connection)

    return engine


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _sqlite_engine(url: sa.URL, timeouts: Timeouts, echo: bool) -> Engine:
    pool: dict[str, Any] = {}
    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
        pool["pool_timeout"] = timeouts.pool  # an in-memory database has one connection
    engine = sa.create_engine(
        url,
        echo=echo,
        json_serializer=dumps,
        json_deserializer=parse,
        connect_args={"timeout": timeouts.lock},
        **pool,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        # Take transaction control away from the sqlite3 module so BEGIN is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={_ms(timeouts.lock)}")
        cursor.close()
        dbapi_connection.create_function("uuid_text", 1, uuid_text, deterministic=True)
        clock = SqliteStatementClock(timeouts.statement)
        dbapi_connection.set_progress_handler(clock, SqliteStatementClock.INSTRUCTIONS)
        record.info["statement_clock"] = clock

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if _ONE_STATEMENT in options:
            return  # its one statement is a transaction of its own (`Store.read_once`)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get(_WRITE, False) else "BEGIN")

    @event.listens_for(engine, "before_cursor_execute")
    def _start_clock(conn: Connection, *args: Any) -> None:
        options = conn.get_execution_options()
        _one_more(options, args[1])
        clock = conn.connection.info["statement_clock"]
        if options.get(UNBOUNDED, False):
            clock.stop()
        else:
            clock.start()

    @event.listens_for(engine, "after_cursor_execute")
    def _stop_clock(conn: Connection, *_args: Any) -> None:
        conn.connection.info["statement_clock"].stop()

    @event.listens_for(engine, "handle_error")
    def _stop_clock_on_error(context: sa.engine.ExceptionContext) -> None:
        # Else the stale deadline would interrupt the rollback or commit that follows.
        if context.connection is not None and not context.connection.closed:
            context.connection.connection.info["statement_clock"].stop()

    return engine
