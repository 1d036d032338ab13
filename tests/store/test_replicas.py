"""The store's reads on a streaming replica, and the check that a read naming a position is
answered by a snapshot that includes it (`upstream.store.replicas`)."""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from tests.private_postgres import PrivateCluster, primary_and_replica
from upstream.store import replicas as replicas_module
from upstream.store import schema as t
from upstream.store.change_log import RUNS, position, record
from upstream.store.deadlines import Watchdog
from upstream.store.engine import Store, Timeouts, create_engine, probe_engine
from upstream.store.replicas import Replica, ReplicaSet, reads_must_include

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    with primary_and_replica() as (primary, replica):
        yield primary, replica


@pytest.fixture
def store(pair: tuple[PrivateCluster, PrivateCluster]) -> Iterator[Store]:
    """A store on the primary reading from the replica (never lagging too far, here). Its
    lag probes wait long: one timing out on a loaded machine would take the replica out of
    use until it replays what it was made to lack, and the tests read which server answered."""
    primary, replica = pair
    store = Store(primary.url)
    store.read_from_replicas([replica.url], max_lag=600, fallback="primary", probe_seconds=60)
    yield store
    replica.resume_replay()
    store.dispose()


def _append(conn: sa.Connection) -> None:
    record(conn, RUNS, [uuid.uuid4()])


def _newest_on_read(store: Store) -> tuple[int, bool]:
    """The position the read sees, and whether the primary answered it."""
    with store.read() as conn:
        return position(conn), conn.engine is store.engine


def test_reads_use_the_replica_and_writes_the_primary(
    store: Store, pair: tuple[PrivateCluster, PrivateCluster]
) -> None:
    _, replica = pair
    replica.pause_replay()
    written = store.write_at(_append)[1]
    seen, on_primary = _newest_on_read(store)
    assert (seen, on_primary) == (written - 1, False)
    assert store.read_position() == written - 1
    with store.read(primary=True) as conn:
        assert position(conn) == written


def test_a_read_naming_a_position_the_replica_lacks_is_answered_by_the_primary(
    store: Store, pair: tuple[PrivateCluster, PrivateCluster]
) -> None:
    _, replica = pair
    replica.pause_replay()
    written = store.write_at(_append)[1]

    def read_after_the_write() -> tuple[int, bool]:
        reads_must_include(written)
        return _newest_on_read(store)

    assert contextvars.copy_context().run(read_after_the_write) == (written, True)
    # One that names an older position, which the replica has, stays on the replica.
    reads_must_include(written - 1)
    try:
        assert _newest_on_read(store) == (written - 1, False)
    finally:
        reads_must_include(None)


def test_the_lag_counts_from_the_oldest_write_the_replica_lacks(
    store: Store, pair: tuple[PrivateCluster, PrivateCluster]
) -> None:
    primary, replica = pair
    assert store.replicas is not None
    store.replicas.measure()
    (caught_up,) = store.replicas.lags()
    assert (caught_up.seconds, caught_up.positions) == (0.0, 0)
    replica.pause_replay()
    first = store.write_at(_append)[1]
    store.write_at(_append)
    engine = sa.create_engine(primary.url)
    with engine.connect() as conn:
        recorded = conn.execute(
            sa.select(t.change_log.c.recorded_at).where(t.change_log.c.position == first)
        ).scalar_one()
        elapsed = conn.execute(sa.select(sa.func.now() - recorded)).scalar_one()
    engine.dispose()
    store.replicas.measure()
    (lagging,) = store.replicas.lags()
    assert lagging.positions == 2
    assert lagging.seconds >= elapsed.total_seconds()
    assert lagging.name == replica.url


def test_a_replica_given_up_is_taken_back_only_once_it_has_caught_up(
    store: Store, pair: tuple[PrivateCluster, PrivateCluster]
) -> None:
    primary, replica = pair
    probe = Timeouts(2, 2, 2, 2)
    shift = [timedelta(0)]
    replicas = ReplicaSet(
        [
            Replica(
                "replica",
                create_engine(replica.url, pool_size=1, timeouts=probe),
                create_engine(replica.url, pool_size=1, timeouts=probe),
            )
        ],
        create_engine(primary.url, pool_size=1, timeouts=probe),
        max_lag=5,
        fallback="primary",
        probe_seconds=2,
        now=lambda: datetime.now(UTC) + shift[0],
    )
    (watched,) = replicas.replicas
    try:
        assert replicas.engine_for_reads() is watched.engine
        replica.pause_replay()
        store.write_at(_append)
        shift[0] = timedelta(seconds=60)  # the missing write is a minute old
        replicas.measure()
        assert replicas.engine_for_reads() is None
        shift[0] = timedelta(0)  # close enough again, but behind what the primary had
        replicas.measure()
        assert watched.lag.seconds <= 5
        assert replicas.engine_for_reads() is None
        replica.resume_replay()
        deadline = time.monotonic() + 30
        while replicas.engine_for_reads() is None:
            assert time.monotonic() < deadline, "the replica was not taken back"
            replicas.measure()
            time.sleep(0.1)
        assert watched.lag.positions == 0
    finally:
        replicas.close()
        for replica_set_engine in replicas.engines:
            replica_set_engine.dispose()


def _statements_logged(cluster: PrivateCluster) -> int:
    """Statements in the cluster's log, sent as text or as parsed statements executed."""
    log = (cluster.root / "server.log").read_text(errors="replace")
    return len(re.findall(r"LOG:  (?:statement|execute [^:]*): ", log))


#: A URL's query making its sessions log every statement they run.
LOGGED = "?options=-c%20log_statement%3Dall"


@contextlib.contextmanager
def probed(
    pair: tuple[PrivateCluster, PrivateCluster], query: str = ""
) -> Iterator[tuple[ReplicaSet, Engine]]:
    """A replica set measured only when the test says (`measure`) through probe engines
    (`probe_engine`) on the pair's URLs with `query`, and the replica's probe."""
    primary, replica = pair
    watchdog = Watchdog()
    probe = probe_engine(replica.url + query, 5, watchdog)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(replicas_module, "CHECK_EVERY", 3600)  # no rounds of its own
        replicas = ReplicaSet(
            [Replica("replica", create_engine(replica.url), probe)],
            probe_engine(primary.url + query, 5, watchdog),
            max_lag=5,
            fallback="primary",
            probe_seconds=5,
        )
    try:
        yield replicas, probe
    finally:
        replicas.close()
        for engine in replicas.engines:
            engine.dispose()
        watchdog.close()


def test_a_lag_measurement_is_one_statement_on_each_server(
    pair: tuple[PrivateCluster, PrivateCluster],
) -> None:
    """A server measures its replicas twice a second for as long as it runs: each look is a
    statement on the replica and one on the primary, with no ping, BEGIN or ROLLBACK around
    them (counted in the servers' logs: only the probes' sessions log their statements)."""
    primary, replica = pair
    with probed(pair, LOGGED) as (replicas, _):
        before = _statements_logged(primary), _statements_logged(replica)
        for _ in range(10):
            replicas.measure()
        after = _statements_logged(primary), _statements_logged(replica)
        assert (after[0] - before[0], after[1] - before[1]) == (10, 10)
        assert replicas.lags()[0].positions == 0


def test_a_probe_connection_the_server_dropped_is_replaced_within_the_look(
    pair: tuple[PrivateCluster, PrivateCluster],
) -> None:
    """Not pinged when taken from the pool, a probe's connection that the server ended
    fails its look, which is asked again on a new connection: the replica still answers."""
    _, replica = pair
    with probed(pair) as (replicas, probe):
        with probe.connect() as conn:
            backend = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        engine = sa.create_engine(replica.url)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": backend}).scalar()
        engine.dispose()
        replicas.measure()
        (lag,) = replicas.lags()
        assert (lag.answers, lag.positions) == (True, 0)
        with probe.connect() as conn:
            assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != backend


def test_the_position_a_read_waits_for_is_one_statement_on_the_replica(
    pair: tuple[PrivateCluster, PrivateCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read naming a position asks the replica's position until it includes it: each
    look is the pooled connection's ping and one statement, no BEGIN or ROLLBACK."""
    primary, replica = pair
    monkeypatch.setattr(replicas_module, "CHECK_EVERY", 3600)  # no lag probe meanwhile
    store = Store(primary.url)
    store.read_from_replicas([replica.url + LOGGED], max_lag=600, fallback="primary",
                             probe_seconds=60)  # fmt: skip
    try:
        written = store.write_at(_append)[1]
        while store.read_position() < written:
            time.sleep(0.01)
        before = _statements_logged(replica)
        assert [store.read_position() for _ in range(5)] == [written] * 5
        assert _statements_logged(replica) - before == 10
    finally:
        store.dispose()
