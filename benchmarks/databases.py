"""Benchmark databases: a fresh, migrated SQLite file or PostgreSQL database per measurement,
removed afterwards. PostgreSQL is the local server (user postgres, trust auth) unless
UPSTREAM_BENCH_PG_URL names another administrative URL. UPSTREAM_BENCH_DB_SUFFIX, when set, is
appended to every database name, so benchmarks run from two checkouts at once on one server
never drop each other's database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from upstream.store.engine import Store
from upstream.store.migrate import upgrade

PG_ADMIN_URL = os.environ.get(
    "UPSTREAM_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
KINDS = ("sqlite", "postgresql")


@contextmanager
def fresh_database(kind: str, label: str, workdir: Path, *, keep: bool = False) -> Iterator[str]:
    """The URL of an empty database with the current schema, dropped on exit unless `keep`."""
    if kind == "sqlite":
        path = workdir / f"{label}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        url = f"sqlite:///{path}"
        _migrate(url)
        yield url
        if not keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    if kind != "postgresql":
        raise ValueError(f"unknown database kind {kind!r} (expected one of {KINDS})")
    suffix = os.environ.get("UPSTREAM_BENCH_DB_SUFFIX", "")
    name = f"upstream_bench_{label}{suffix}".replace("-", "_")
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = sa.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        _migrate(url)
        yield url
        if not keep:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def postgres_available() -> str | None:
    """None when the PostgreSQL server answers, else why not."""
    engine = sa.create_engine(PG_ADMIN_URL)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        return f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {str(exc).splitlines()[0]}"
    finally:
        engine.dispose()
    return None


def _migrate(url: str) -> None:
    store = Store(url)
    try:
        upgrade(store)
    finally:
        store.dispose()
