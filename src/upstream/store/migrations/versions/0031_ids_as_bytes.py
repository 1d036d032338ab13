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
from collections.abc import Callable

from alembic import op
from sqlalchemy.engine import Connection

from upstream.store.sqlite_tables import quoted, remake, without_foreign_keys

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
    with without_foreign_keys(bind):
        for table, columns in ID_COLUMNS.items():
            _remake(bind, table, columns, old, new, convert)


def _remake(
    bind: Connection,
    table: str,
    columns: tuple[str, ...],
    old: str,
    new: str,
    convert: Callable[[str], str],
) -> None:
    """`table` made again with `new` for the type of `columns` (when they are of `old`)."""
    typed = {row[1]: row[2] for row in bind.exec_driver_sql(f"PRAGMA table_info({quoted(table)})")}
    if any(typed[column] != old for column in columns):
        return

    def retyped(statement: str) -> str:
        for column in columns:
            statement, found = re.subn(
                rf"([\s,(]\"?{re.escape(column)}\"?\s+){re.escape(old)}", rf"\g<1>{new}", statement
            )
            assert found == 1, (table, column)
        return statement

    def value(name: str) -> str:
        if name not in columns:
            return quoted(name)
        return f"CASE WHEN {quoted(name)} IS NULL THEN NULL ELSE {convert(quoted(name))} END"

    remake(bind, table, f"_{table}_{revision}", retyped, value)
