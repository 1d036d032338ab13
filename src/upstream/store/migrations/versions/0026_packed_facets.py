"""packed facets: runs', relations' and versions' documents compressed with the events' dictionary

A run's facets, a relation's (`runs.facets`, `relations.facets`, `declared_relations.facets`)
and a dataset version's fields and facets (`version_contents`) were JSON documents (`jsonb`
on PostgreSQL, text on SQLite): most of the derived rows, and never read into by SQL. Each
is now its compact JSON text in one zstd frame, compressed with the store's latest event
dictionary (`upstream.store.packed_facets`), or with none while the store has none.

Every stored document is converted here, in chunks, as migration 0025 converted the events;
the space given up is reused by the store, and given back to the file system by
PostgreSQL's `VACUUM FULL` or SQLite's `VACUUM`.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
import zstandard
from alembic import op
from sqlalchemy.dialects import postgresql

from upstream.model.json_text import dumps, parse
from upstream.store.payloads import LEVEL

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

#: Rows read, converted and written back at a time.
CHUNK = 2000

#: Each table with its key, by which it is read in chunks and written back.
_KEYS = {
    "runs": ("id", "month"),
    "relations": ("id", "month"),
    "declared_relations": ("id",),
    "version_contents": ("id",),
}
#: The documents converted: (table, column).
_CONVERTED = [(name, "facets") for name in _KEYS] + [("version_contents", "fields")]

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _table(name: str, column: str) -> sa.TableClause:
    keys = [sa.column(key, sa.Uuid() if key == "id" else sa.Integer()) for key in _KEYS[name]]
    return sa.table(
        name,
        *keys,
        sa.column(column, _JSON),
        sa.column(f"{column}_zstd", sa.LargeBinary()),
        sa.column(f"{column}_json", _JSON),
    )


def upgrade() -> None:
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    latest = conn.execute(
        sa.text("SELECT content FROM event_dictionaries ORDER BY id DESC LIMIT 1")
    ).scalar()
    compressor = (
        zstandard.ZstdCompressor(level=LEVEL)
        if latest is None
        else zstandard.ZstdCompressor(level=LEVEL, dict_data=zstandard.ZstdCompressionDict(latest))
    )
    # SQLite adds a NOT NULL column only with a default, and cannot add the constraint later.
    empty = sa.text("x''") if sqlite else None
    for name, column in _CONVERTED:
        table = _table(name, column)
        packed = f"{column}_zstd"
        op.add_column(
            name, sa.Column(packed, sa.LargeBinary(), nullable=not sqlite, server_default=empty)
        )
        update = _update(table, **{packed: sa.bindparam("value")})
        for chunk in _chunks(conn, table, sa.cast(table.c[column], sa.Text)):
            texts = [dumps(parse(row[-1])).encode() for row in chunk]
            values = [compressor.compress(text) for text in texts]
            bound = [_bound(table, row, value) for row, value in zip(chunk, values, strict=True)]
            conn.execute(update, bound)
        _replace(name, column, packed, sqlite)


def downgrade() -> None:
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    stored = conn.execute(sa.text("SELECT id, content FROM event_dictionaries")).all()
    readers = {0: zstandard.ZstdDecompressor()}
    for ident, content in stored:
        dictionary = zstandard.ZstdCompressionDict(content)
        readers[ident] = zstandard.ZstdDecompressor(dict_data=dictionary)
    empty = sa.text("'{}'") if sqlite else None
    for name, column in _CONVERTED:
        table = _table(name, column)
        kept = f"{column}_json"
        op.add_column(name, sa.Column(kept, _JSON, nullable=not sqlite, server_default=empty))
        update = _update(table, **{kept: sa.bindparam("value", type_=_JSON)})
        for chunk in _chunks(conn, table, sa.type_coerce(table.c[column], sa.LargeBinary())):
            documents = [parse(_unpacked(readers, row[-1])) for row in chunk]
            bound = [_bound(table, row, value) for row, value in zip(chunk, documents, strict=True)]
            conn.execute(update, bound)
        _replace(name, column, kept, sqlite)


def _replace(name: str, column: str, new: str, sqlite: bool) -> None:
    """Drop `column` from table `name` and call `new` by its name."""
    if sqlite:
        op.execute(f"ALTER TABLE {name} DROP COLUMN {column}")
        op.execute(f"ALTER TABLE {name} RENAME COLUMN {new} TO {column}")
    else:
        op.drop_column(name, column)
        op.alter_column(name, new, new_column_name=column, nullable=False)


def _update(table: sa.TableClause, **values: Any) -> sa.Update:
    keys = _KEYS[table.name]
    return (
        table.update().where(*(table.c[k] == sa.bindparam(f"k_{k}") for k in keys)).values(**values)
    )


def _bound(table: sa.TableClause, row: Sequence[Any], value: Any) -> dict[str, Any]:
    keys = _KEYS[table.name]
    return {**{f"k_{k}": row[i] for i, k in enumerate(keys)}, "value": value}


def _chunks(
    conn: sa.Connection, table: sa.TableClause, column: sa.ColumnElement[Any]
) -> Iterator[Sequence[Any]]:
    """Every row's key and `column`, `CHUNK` at a time in key order."""
    keys = [table.c[k] for k in _KEYS[table.name]]
    after: tuple[Any, ...] | None = None
    while True:
        query = sa.select(*keys, column).order_by(*keys).limit(CHUNK)
        if after is not None:
            bound = (sa.literal(value, key.type) for key, value in zip(keys, after, strict=True))
            query = query.where(sa.tuple_(*keys) > sa.tuple_(*bound))
        chunk = conn.execute(query).all()
        if not chunk:
            return
        yield chunk
        after = tuple(chunk[-1][: len(keys)])


def _unpacked(readers: dict[int, zstandard.ZstdDecompressor], value: bytes) -> bytes:
    return readers[zstandard.get_frame_parameters(value).dict_id].decompress(value)
