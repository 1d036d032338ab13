"""compressed payloads: the raw events kept compressed by zstd with a dictionary of their own

Each event's compact JSON text was kept as text (PostgreSQL compressed it with LZ4, SQLite
not at all). It is now one zstd frame (`payload_zstd`), compressed with a dictionary trained
on the store's events (`event_dictionaries`, `upstream.store.payloads`): here on the latest
`TRAINING_EVENTS` of them when the store holds that many, otherwise by a server or command
once its writes bring the store to that many.

Every stored event is converted here, in chunks, rather than left readable as it was: a
single form is what every reader of raw events reads, and the space the texts took is what
the change is for. The same pass keeps the namespaces of each event's inputs and outputs
(`model.named_namespaces`), by which Marquez's events of a namespace are found now that no
SQL can read the payload. The medium benchmark store (43,720 events) converts in about a
minute (docs/performance.md); the space given up is reused by the store, and given back to
the file system by PostgreSQL's `VACUUM FULL events` or SQLite's `VACUUM`.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa
import zstandard
from alembic import op

from upstream.model.named_namespaces import io_namespaces_text
from upstream.store.payloads import LEVEL, TRAINING_EVENTS, train

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

#: Events read, converted and written back at a time.
CHUNK = 2000

_events = sa.table(
    "events",
    sa.column("seq", sa.BigInteger()),
    sa.column("month", sa.Integer()),
    sa.column("payload", sa.Text()),
    sa.column("payload_zstd", sa.LargeBinary()),
    sa.column("io_namespaces", sa.Text()),
)


def upgrade() -> None:
    dictionaries = op.create_table(
        "event_dictionaries",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("trained_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    op.add_column("events", sa.Column("io_namespaces", sa.Text(), nullable=True))
    # SQLite adds a NOT NULL column only with a default, and cannot add the constraint later.
    empty = sa.text("x''") if sqlite else None
    op.add_column(
        "events",
        sa.Column("payload_zstd", sa.LargeBinary(), nullable=not sqlite, server_default=empty),
    )
    compressor = zstandard.ZstdCompressor(level=LEVEL)
    e = _events.c
    latest = sa.select(e.payload).order_by(e.seq.desc()).limit(TRAINING_EVENTS)
    sample = [text.encode() for text in conn.execute(latest).scalars()]
    if len(sample) == TRAINING_EVENTS:
        try:
            dictionary = train(sample, 1)
        except zstandard.ZstdError:
            pass  # too alike to train on: the first write to find enough events tries again
        else:
            row = {"id": 1, "content": dictionary.as_bytes(), "events": len(sample)}
            op.bulk_insert(dictionaries, [{**row, "trained_at": datetime.now(UTC)}])
            compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    update = (
        _events.update()
        .where(e.seq == sa.bindparam("at"), e.month == sa.bindparam("in_month"))
        .values(io_namespaces=sa.bindparam("names"), payload_zstd=sa.bindparam("packed"))
    )
    for chunk in _chunks(conn, e.payload):
        converted = [
            {
                "at": seq,
                "in_month": month,
                "names": io_namespaces_text(orjson.loads(text)),
                "packed": compressor.compress(text.encode()),
            }
            for seq, month, text in chunk
        ]
        conn.execute(update, converted)
    if sqlite:
        op.execute("ALTER TABLE events DROP COLUMN payload")
    else:
        op.drop_column("events", "payload")
        op.alter_column("events", "payload_zstd", nullable=False)


def downgrade() -> None:
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    empty = sa.text("''") if sqlite else None
    op.add_column(
        "events", sa.Column("payload", sa.Text(), nullable=not sqlite, server_default=empty)
    )
    stored = conn.execute(sa.text("SELECT id, content FROM event_dictionaries")).all()
    readers = {0: zstandard.ZstdDecompressor()}
    for ident, content in stored:
        dictionary = zstandard.ZstdCompressionDict(content)
        readers[ident] = zstandard.ZstdDecompressor(dict_data=dictionary)
    e = _events.c
    update = (
        _events.update()
        .where(e.seq == sa.bindparam("at"), e.month == sa.bindparam("in_month"))
        .values(payload=sa.bindparam("text"))
    )
    for chunk in _chunks(conn, e.payload_zstd):
        texts = [
            {"at": seq, "in_month": month, "text": _unpacked(readers, value)}
            for seq, month, value in chunk
        ]
        conn.execute(update, texts)
    if sqlite:
        op.execute("ALTER TABLE events DROP COLUMN payload_zstd")
    else:
        op.drop_column("events", "payload_zstd")
        op.alter_column("events", "payload", nullable=False)
    op.drop_column("events", "io_namespaces")
    op.drop_table("event_dictionaries")


def _chunks(conn: sa.Connection, column: sa.ColumnElement[Any]) -> Iterator[Sequence[Any]]:
    """Every event's (seq, month, `column`), `CHUNK` at a time in seq order."""
    e = _events.c
    after = -1
    while True:
        query = sa.select(e.seq, e.month, column).where(e.seq > after).order_by(e.seq)
        chunk = conn.execute(query.limit(CHUNK)).all()
        if not chunk:
            return
        yield chunk
        after = chunk[-1][0]


def _unpacked(readers: dict[int, zstandard.ZstdDecompressor], value: bytes) -> str:
    return readers[zstandard.get_frame_parameters(value).dict_id].decompress(value).decode()
