"""A PostgreSQL cluster of the test's own, which it may hang, stop and start at will.

The shared server on 5432 is never stopped or paused: other sessions' tests use it. A private
cluster is a copy of the data directory `initdb` made once in the process, in a temporary
directory, started with `pg_ctl` on a free port. PostgreSQL refuses to run as root, so when
the tests run as root (as CI does) the cluster's programs run as the `postgres` OS user
(`runuser -u postgres --`).

`primary_and_replica()` makes the store's tables in a cluster, then a second cluster from
the first with `pg_basebackup -R` on another port: a hot standby streaming from it, whose
replay `pause_replay()` holds back (it then lags by every write made meanwhile) and
`resume_replay()` lets go.

`hang()` stops every process of the cluster with SIGSTOP (the postmaster first, so it starts
no new backend, then each backend): connections stay open and every byte waits, as with a
server that froze. `thaw()` sends SIGCONT in the reverse order. `stop(mode)` and `start()`
are `pg_ctl`'s, for a fast or an immediate shutdown.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import IN_CI, free_port
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

_OS_USER = "postgres"


def _bin_dir() -> Path | None:
    """The directory of `initdb` and `pg_ctl`: Debian keeps them out of PATH."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent  # a link in PATH: the directory of them all
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


class PrivateCluster:
    """One PostgreSQL cluster in a temporary directory, on a free loopback port."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="upstream-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_OS_USER)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.as_user = ["runuser", "-u", _OS_USER, "--"]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        command = [*self.as_user, str(self.bin_dir / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout}{done.stderr}")

    def init(self) -> PrivateCluster:
        """A new data directory: a copy of the one `initdb` made for this process's first
        cluster (a copy takes a tenth of an initdb's time, and every cluster starts alike)."""
        initialized = _initialized(self.bin_dir)
        # As the cluster's OS user, so that the copy is its own (PostgreSQL checks).
        copy = [*self.as_user, "cp", "-a", str(initialized), str(self.data)]
        subprocess.run(copy, capture_output=True, text=True, timeout=120, check=True)
        return self

    def copy_of(self, primary: PrivateCluster) -> PrivateCluster:
        """Make this cluster a streaming replica of `primary`: a base backup that starts as
        a hot standby following it (`-R` writes the connection to follow)."""
        self._run(
            "pg_basebackup",
            *("-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"),
            *("-D", str(self.data), "-R", "-X", "stream", "-c", "fast"),
        )
        return self

    def pause_replay(self) -> None:
        """Stop replaying the primary's WAL, and return once replay has stopped:
        `pg_wal_replay_pause()` only asks, and on a busy machine the replica went on to
        replay a write made after the request (the test then saw it on the replica)."""
        self._sql("SELECT pg_wal_replay_pause()")
        engine = sa.create_engine(self.url)
        deadline = time.monotonic() + 30
        try:
            with engine.connect() as conn:
                state = sa.text("SELECT pg_get_wal_replay_pause_state()")
                while conn.execute(state).scalar_one() != "paused":
                    assert time.monotonic() < deadline, "the replica's replay did not pause"
                    time.sleep(0.02)
        finally:
            engine.dispose()

    def resume_replay(self) -> None:
        self._sql("SELECT pg_wal_replay_resume()")

    def _sql(self, statement: str) -> None:
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                conn.execute(sa.text(statement))
        finally:
            engine.dispose()

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off "
            "-c max_connections=100"
        )
        log = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def _processes(self) -> list[int]:
        """The postmaster, then its children (the backends and auxiliary processes)."""
        pid_file = self.data / "postmaster.pid"
        postmaster = int(pid_file.read_text().splitlines()[0])
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(postmaster)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        return [postmaster, *map(int, children)]

    def hang(self) -> None:
        for pid in self._processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in reversed(self._processes()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self.thaw()
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@functools.cache
def _initialized(bin_dir: Path) -> Path:
    """The data directory `initdb` made once in this process, which each new cluster copies;
    removed when the process exits."""
    template = PrivateCluster(bin_dir)
    atexit.register(shutil.rmtree, template.root, ignore_errors=True)
    options = ("-U", "postgres", "--auth=trust", "-E", "UTF8", "-N")
    template._run("initdb", "-D", str(template.data), *options)
    return template.data


def _server_programs() -> Path:
    """Where initdb, pg_ctl and pg_basebackup are; skips (fails under CI=true) without them."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        _unavailable("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
        raise AssertionError("unreachable")
    return bin_dir


@contextlib.contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    """A started cluster, removed afterwards; skips (fails under CI=true) without PostgreSQL's
    server programs."""
    cluster = PrivateCluster(_server_programs())
    try:
        cluster.init().start()
        yield cluster
    finally:
        cluster.remove()


@contextlib.contextmanager
def primary_and_replica() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    """A started primary holding an empty store and a hot standby streaming from it, both
    removed afterwards. The store's tables are made before the standby is copied from the
    primary, so the standby has them from its start: made after, they reached it only once
    it replayed them, and a test that read it first (or paused its replay) found no store."""
    with private_cluster() as primary:
        store = Store(primary.url)
        try:
            upgrade(store)
        finally:
            store.dispose()
        replica = PrivateCluster(primary.bin_dir)
        try:
            replica.copy_of(primary).start()
            yield primary, replica
        finally:
            replica.remove()
