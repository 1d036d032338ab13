"""ids on SQLite as their 16 bytes, not 32 hex digits

SQLAlchemy's `Uuid` keeps an id on SQLite as CHAR(32) text; the schema's `Id` keeps its 16
bytes in a BLOB (`upstream.store.schema`), as PostgreSQL's `uuid` does: half the bytes in
every row and every index that holds an id.

On SQLite every table with an id column is made again, as SQLite changes a column's type
(https://sqlite.org/lang_altertable.html#otheralter): a new table from the old one's own
statement with BLOB for each id column, filled from the old one with each id's bytes, the old
one dropped and the new one given its name, its indexes made again from their own statements,
and the planner's statistics of the old one kept. Foreign keys are off meanwhile (SQLite
would check every row of a table that others refer to as it is dropped); that takes the work
out of the migration's transaction, so it commits on its own. A table whose ids are bytes
already is left alone, so the migration can run again after being cut short. Nothing else
changes: no rebuild is needed. PostgreSQL keeps its `uuid`: nothing to do.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from alembic import op
from sqlalchemy.engine import Connection

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

#: Every id column, by table, at revision 0030.
ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "namespaces": ("id",),
    "datasets": ("id", "namespace_id"),
    "jobs": ("id", "namespace_id"),
    "dataset_symlinks": ("id", "dataset_id"),
    "operation_sets": ("id", "dataset_id"),
    "deletions": ("entity_id",),
    "dataset_tags": ("dataset_id",),
    "field_tags": ("dataset_id",),
    "declarations": ("id", "owner_id"),
    "declared_edges": (
        "id",
        "run_id",
        "job_id",
        "source_dataset_id",
        "source_job_id",
        "source_run_id",
        "target_dataset_id",
        "target_job_id",
        "target_run_id",
        "declaration_id",
    ),
    "declared_relations": ("id", "dataset_id", "job_id", "run_id", "declaration_id"),
    "dataset_aliases": ("id", "canonical_id"),
    "lineage_sets": ("id", "target_dataset_id"),
    "lineage_set_edges": (
        "set_id",
        "source_dataset_id",
        "source_job_id",
        "source_run_id",
        "target_dataset_id",
        "target_job_id",
        "target_run_id",
        "transformations_id",
    ),
    "run_months": ("run_id",),
    "events": ("run_id",),
    "runs": ("id", "job_id", "parent_run_id", "root_run_id"),
    "relations": ("id", "dataset_id", "job_id", "run_id"),
    "lineage_links": ("id", "owner_id", "job_id", "target_dataset_id", "set_id"),
    "run_operation_sets": ("id", "operation_set_id", "run_id", "job_id"),
    "job_tags": ("job_id",),
    "subscriptions": ("id",),
    "notifications": ("id", "subscription_id"),
    "delivery_attempts": ("notification_id",),
    "access_tokens": ("id",),
    "job_dependencies": (
        "id",
        "run_id",
        "upstream_job_id",
        "upstream_run_id",
        "downstream_job_id",
        "downstream_run_id",
    ),
    "published_batches": ("id",),
    "version_contents": ("id",),
    "dataset_versions": ("id", "dataset_id", "run_id", "content_id"),
    "edge_transformations": ("id",),
    "flows": ("owner_id", "source_dataset_id", "target_dataset_id", "job_id"),
    "declared_flows": (
        "owner_id",
        "source_dataset_id",
        "target_dataset_id",
        "job_id",
        "declaration_id",
    ),
}

_TEXT, _BYTES = "CHAR(32)", "BLOB"
#: The SQL function that makes an id's bytes of its hex digits (SQLite 3.41's `unhex`, which
#: older SQLite lacks).
_UNHEX = "upstream_unhex"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _retype(bind, _TEXT, _BYTES, lambda column: f"{_UNHEX}({column})")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _retype(bind, _BYTES, _TEXT, lambda column: f"lower(hex({column}))")


def _unhex(digits: str | None) -> bytes | None:
    return None if digits is None else bytes.fromhex(digits)


def _retype(bind: Connection, old: str, new: str, convert: Callable[[str], str]) -> None:
    """Make every table again whose id columns are of type `old`, with `new`, each id made
    by `convert` (SQL of the column's name; NULL stays NULL)."""
    raw = bind.connection.dbapi_connection
    assert raw is not None
    raw.create_function(_UNHEX, 1, _unhex, deterministic=True)
    with _without_foreign_keys(bind):
        for table, columns in ID_COLUMNS.items():
            _remake(bind, table, columns, old, new, convert)


@contextmanager
def _without_foreign_keys(bind: Connection) -> Iterator[None]:
    """Foreign keys off, in a transaction of its own: SQLite changes `foreign_keys` only
    outside a transaction, so what the migration's transaction holds is committed first, and
    it goes on after (in SQLite's terms, under the same SQLAlchemy transaction)."""
    raw: Any = bind.connection.dbapi_connection
    was_open = raw.in_transaction
    if was_open:
        raw.execute("COMMIT")
    raw.execute("PRAGMA foreign_keys = OFF")
    raw.execute("BEGIN IMMEDIATE")
    try:
        yield
        raw.execute("COMMIT")
    except BaseException:
        raw.execute("ROLLBACK")
        raise
    finally:
        raw.execute("PRAGMA foreign_keys = ON")
        if was_open:
            raw.execute("BEGIN")


def _remake(
    bind: Connection,
    table: str,
    columns: tuple[str, ...],
    old: str,
    new: str,
    convert: Callable[[str], str],
) -> None:
    """`table` made again with `new` for the type of `columns` (when they are of `old`)."""
    quoted = _quoted(table)
    [made] = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalars()
    typed = {row[1]: row[2] for row in bind.exec_driver_sql(f"PRAGMA table_info({quoted})")}
    if any(typed[column] != old for column in columns):
        return
    indexes = list(
        bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL",
            (table,),
        ).scalars()
    )
    statistics = _statistics(bind, table)
    aside = f"_{table}_{revision}"
    statement = re.sub(
        rf"^CREATE TABLE\s+(\"?){re.escape(table)}\1", f"CREATE TABLE {_quoted(aside)}", made
    )
    for column in columns:
        statement, found = re.subn(
            rf"([\s,(]\"?{re.escape(column)}\"?\s+){re.escape(old)}", rf"\g<1>{new}", statement
        )
        assert found == 1, (table, column)
    bind.exec_driver_sql(statement)
    names = ", ".join(_quoted(name) for name in typed)
    values = ", ".join(
        f"CASE WHEN {_quoted(name)} IS NULL THEN NULL ELSE {convert(_quoted(name))} END"
        if name in columns
        else _quoted(name)
        for name in typed
    )
    bind.exec_driver_sql(f"INSERT INTO {_quoted(aside)} ({names}) SELECT {values} FROM {quoted}")
    bind.exec_driver_sql(f"DROP TABLE {quoted}")
    bind.exec_driver_sql(f"ALTER TABLE {_quoted(aside)} RENAME TO {quoted}")
    for index in indexes:
        bind.exec_driver_sql(index)
    for stat, rows in statistics.items():
        for row in rows:
            marks = ", ".join("?" * len(row))
            bind.exec_driver_sql(f"INSERT INTO {stat} VALUES ({marks})", tuple(row))


def _statistics(bind: Connection, table: str) -> dict[str, list[tuple[Any, ...]]]:
    """The planner's statistics of `table` (`ANALYZE`'s rows in sqlite_stat1, and in
    sqlite_stat4 where SQLite keeps it), which dropping it deletes: the same rows, with the
    same index names, hold for the new table."""
    held = bind.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE name IN ('sqlite_stat1', 'sqlite_stat4')"
    ).scalars()
    return {
        stat: [
            tuple(row)
            for row in bind.exec_driver_sql(f"SELECT * FROM {stat} WHERE tbl = ?", (table,))
        ]
        for stat in held.all()
    }


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
