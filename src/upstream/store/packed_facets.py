"""The facets of runs and relations, and the fields and facets of dataset versions, as the
store keeps them: each document's compact JSON text compressed by zstd with the store's
event dictionary (`store.payloads`), which knows them well since every one of them is part
of an event.

They were most of the derived rows (a run's facets 2.2 kB as `jsonb`, a relation's 0.6 kB,
on the medium workload; docs/performance.md), almost every one distinct, and no SQL reads
into them: they are read whole, by id, to be merged with what an event adds or to be shown.
Every writer and reader of these columns goes through `packed_rows` / `unpacked_rows` or
`pack` / `unpack`, which give back the same documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.json_text import dumps, parse
from upstream.store.payloads import compressor, decompressed

#: The documents kept packed: each table's columns.
PACKED: dict[str, tuple[str, ...]] = {
    "runs": ("facets",),
    "relations": ("facets",),
    "declared_relations": ("facets",),
    "version_contents": ("fields", "facets"),
}


def pack(conn: Connection, documents: Iterable[Any]) -> list[bytes]:
    """Each JSON document compressed with the store's latest dictionary."""
    packer = compressor(conn)
    return [packer.compress(dumps(document).encode()) for document in documents]


def unpack(conn: Connection, values: Sequence[bytes]) -> list[Any]:
    """The documents `pack` kept, as they were packed."""
    return [parse(raw) for raw in decompressed(conn, values)]


def packed_rows(
    conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
) -> Sequence[Mapping[str, Any]]:
    """`rows` as `table` stores them: copies with their documents packed, when it packs
    some."""
    columns = [c for c in PACKED.get(table.name, ()) if rows and c in rows[0]]
    if not columns:
        return rows
    copies = [dict(row) for row in rows]
    for column in columns:
        packed = pack(conn, [row[column] for row in rows])
        for copy, value in zip(copies, packed, strict=True):
            copy[column] = value
    return copies


def unpacked_rows(conn: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Unpack in place the documents of `rows` read from `table` (or joined to it), when it
    packs some."""
    for column in PACKED.get(table.name, ()) if rows else ():
        found = unpack(conn, [row[column] for row in rows])
        for row, document in zip(rows, found, strict=True):
            row[column] = document
