"""The database a command works on directly (`--db`): migrated before a write, checked to be
current before a read, so that reading never creates or changes a database. A read of a
current database loads none of Alembic (`upstream.store.schema_revision`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from upstream.commands.failures import CliError
from upstream.store.engine import Store, sqlite_file
from upstream.store.schema_revision import is_current


@contextmanager
def database(url: str, *, migrate: bool) -> Iterator[Store]:
    """The store at `url`: migrated first when about to write, checked to be current when
    only read (reading must not create or change a database)."""
    path = sqlite_file(url)
    if not migrate and path is not None and not path.is_file():
        raise CliError(f"no database at {path}: load events first (upstream ingest --db)")
    store = Store(url)
    try:
        if migrate:
            from upstream.store.migrate import upgrade

            upgrade(store)
        elif not is_current(store):
            raise CliError(
                f"the database {store.display_url} is not at the current schema; "
                f"run `upstream db upgrade --db {store.display_url}`"
            )
        yield store
    finally:
        store.dispose()
