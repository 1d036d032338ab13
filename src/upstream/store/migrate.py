"""Schema migrations with Alembic, applied on start or by `upstream db upgrade`.

On PostgreSQL an advisory lock makes concurrent starts (several hosts, several workers) take
turns, so exactly one of them migrates; on an SQLite file, a lock on a file beside it does.

Alembic finds what to run by importing every migration module (compiling each, where Python
keeps no bytecode), tens of milliseconds of a server's start. A store already at the head,
as the migration files name it (`schema_revision.head_from_files`) and its version table
holds it (`schema_revision.stored_revision`), is left to the work at the head only, without
loading Alembic at all (its machinery, Mako and Pygments are a tenth of a second of CPU of
every start); one that is not is migrated by Alembic, which loads the modules once.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from upstream.store.change_log import RELOAD, append_recorded, record
from upstream.store.engine import UNBOUNDED, Store, sqlite_file
from upstream.store.partitions import make_ahead
from upstream.store.schema_revision import head_from_files, stored_revision
from upstream.store.state import stamp_if_empty

if TYPE_CHECKING:
    from alembic.config import Config

_LOCK_KEY = 0x55505354  # "UPST"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    config.attributes["connection"] = connection
    return config


def upgrade(store: Store, revision: str = "head") -> None:
    """Bring the schema to `revision`; at the newest, make the coming months' partitions. A
    store that was migrated tells the readers of its change log to read everything again:
    a migration may change derived rows."""
    with session_lock(store, _LOCK_KEY) as conn:
        head = head_from_files()
        if revision == "head" and head is not None and stored_revision(store) == head:
            before: str | None = head
        else:
            from alembic import command

            before = _revision_of(conn)
            if revision != "head" or head is None or before != head:
                command.upgrade(alembic_config(conn), revision)
        if revision == "head":
            stamp_if_empty(conn)
            make_ahead(conn)
            if before not in (None, head or head_revision()):
                record(conn, RELOAD, ())
                append_recorded(conn)
        conn.commit()


@contextmanager
def session_lock(store: Store, key: int) -> Iterator[Connection]:
    """Hold lock `key` (concurrent holders take turns) on a connection of its own, handed out
    for work that must happen under it: PostgreSQL's advisory lock, or on an SQLite file an
    exclusive lock on a file beside it. SQLite's own database lock covers one transaction
    only, and such work (migrations, a rebuild) is many: two servers starting on one file
    must not rebuild it at once. The work may take long on a large database, and a process
    may wait for another's: the statement and lock timeouts do not apply to this
    connection."""
    with _file_lock(store, key), store.engine.connect() as plain:
        conn = plain.execution_options(**{UNBOUNDED: True})
        if store.dialect == "postgresql":
            conn.execute(text("SET statement_timeout = 0"))
            conn.execute(text("SET lock_timeout = 0"))
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            conn.commit()
        try:
            yield conn
        finally:
            if store.dialect == "postgresql":
                _unlock(conn, key)


def _unlock(conn: Connection, key: int) -> None:
    """Release lock `key` and give the connection its timeouts back before the pool has it.
    A session the server lost meanwhile (a restart, a cut connection) took its lock with it:
    there is nothing to release, and the failure worth reporting is the work's own."""
    try:
        conn.rollback()
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        conn.execute(text("RESET statement_timeout"))
        conn.execute(text("RESET lock_timeout"))
        conn.commit()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        conn.rollback()


def _file_lock(store: Store, key: int) -> AbstractContextManager[object]:
    """An exclusive lock on `<database>.<key>.lock` for an SQLite file; nothing otherwise."""
    database = sqlite_file(store.url.render_as_string(hide_password=False))
    if database is None:
        return nullcontext()
    return _locked(database.with_name(f"{database.name}.{key:x}.lock"))


@contextmanager
def _locked(path: Path) -> Iterator[IO[bytes]]:
    with path.open("ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def current_revision(store: Store) -> str | None:
    with store.engine.connect() as conn:
        return _revision_of(conn)


def _revision_of(conn: Connection) -> str | None:
    """The revision Alembic reads on `conn` (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
