"""The raw events as the store keeps them: each event's compact JSON text, compressed by zstd
with a dictionary trained on the store's own events (`event_dictionaries`). Every writer and
reader of `events.payload_zstd` goes through `pack` and `unpack`, which give back the text
byte for byte.

A payload is one zstd frame, and the frame names its dictionary (zstd's dictionary id, the
row's id): dictionary 0, none, for the events a store keeps before it has one. The first
write that finds `TRAINING_EVENTS` events stored and in its batch trains the dictionary on
the latest of them, in its own transaction, so no payload names a dictionary that was not
committed with it; on PostgreSQL only the writer that takes a lock trains, and a concurrent
one writes its batch without a dictionary rather than wait. A dictionary is never replaced
(one trained on a workload's first 2,000 events keeps it within 1 % of one trained on a
quarter of them, docs/performance.md); a store could train another, and each payload would
still name its own.

Each process keeps, per database, the dictionaries it read committed (`per_engine`); the
one a transaction trains is used by that transaction alone until it commits.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
import zstandard
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import insert_rows_ignoring, try_advisory_xact_lock
from upstream.store.per_engine import PerEngine
from upstream.store.transaction_state import kept, kept_if_any

#: zstd's compression level: 3, its default, compressed the events as small as 19 at a
#: twentieth of its CPU (`python -m benchmarks.raw_options`).
LEVEL = 3
#: The events a dictionary is trained on, and how many a store holds when it trains one.
TRAINING_EVENTS = 2000
#: A dictionary's size: 64 kB, about four events' text.
DICTIONARY_BYTES = 65_536
#: The advisory lock a PostgreSQL writer holds while it trains a dictionary.
_TRAINING_LOCK = uuid.UUID("6d1c55c7-2f69-4a4e-9d43-2b1c1a1b0e25")
_TRAINED = "upstream.payloads.trained"


class StoredEvent(NamedTuple):
    """A stored event as a rebuild or a re-derivation replays it: its text unpacked."""

    seq: int
    payload: str
    received_at: datetime


@dataclass
class _Dictionaries:
    """The dictionaries committed to one database that this process has read, by id."""

    by_id: dict[int, zstandard.ZstdCompressionDict]
    latest: int | None = None

    def __post_init__(self) -> None:
        self.lock = threading.Lock()

    def keep(self, ident: int, content: bytes) -> zstandard.ZstdCompressionDict:
        dictionary = _prepared(zstandard.ZstdCompressionDict(content))
        with self.lock:
            self.by_id.setdefault(ident, dictionary)
            self.latest = max(ident, self.latest or 0)
            return self.by_id[ident]


_kept: PerEngine[_Dictionaries] = PerEngine(lambda _engine: _Dictionaries({}))


def pack(conn: Connection, texts: Sequence[str]) -> list[bytes]:
    """Each event text of a batch as the store keeps it, compressed with the store's
    dictionary (trained now, on what the store and the batch hold, when it is time)."""
    dictionary = _for_writing(conn, texts)
    compressor = (
        zstandard.ZstdCompressor(level=LEVEL)
        if dictionary is None
        else zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    )
    return [compressor.compress(text.encode()) for text in texts]


def unpack(conn: Connection, values: Sequence[bytes]) -> list[str]:
    """The event texts of stored payloads, byte for byte as they were packed."""
    return [raw.decode() for raw in decompressed(conn, values)]


def compressor(conn: Connection) -> zstandard.ZstdCompressor:
    """A compressor with the store's latest dictionary (none while it has none), for other
    texts made of what events hold (`store.packed_facets`): it never trains one."""
    dictionary = _latest(conn)
    if dictionary is None:
        return zstandard.ZstdCompressor(level=LEVEL)
    return zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)


def decompressed(conn: Connection, values: Sequence[bytes]) -> list[bytes]:
    """The bytes of zstd frames compressed with the store's dictionaries (each frame names
    its own: 0, none)."""
    readers: dict[int, zstandard.ZstdDecompressor] = {}
    found = []
    for value in values:
        ident = zstandard.get_frame_parameters(value).dict_id
        reader = readers.get(ident)
        if reader is None:
            dictionary = None if ident == 0 else _dictionary(conn, ident)
            reader = readers[ident] = zstandard.ZstdDecompressor(dict_data=dictionary)
        found.append(reader.decompress(value))
    return found


def stored_events(conn: Connection, rows: Sequence[Any]) -> list[StoredEvent]:
    """Rows of (seq, payload_zstd, received_at) with their payloads unpacked."""
    texts = unpack(conn, [row[1] for row in rows])
    return [StoredEvent(row[0], text, row[2]) for row, text in zip(rows, texts, strict=True)]


def train(texts: Sequence[bytes], ident: int) -> zstandard.ZstdCompressionDict:
    """A dictionary of id `ident` trained on `texts` (raises zstandard.ZstdError when they
    are too few or too alike to train on)."""
    return zstandard.train_dictionary(DICTIONARY_BYTES, list(texts), dict_id=ident, level=LEVEL)


def _for_writing(conn: Connection, texts: Sequence[str]) -> zstandard.ZstdCompressionDict | None:
    latest = _latest(conn)
    return _train_now(conn, texts) if latest is None else latest


def _latest(conn: Connection) -> zstandard.ZstdCompressionDict | None:
    """The dictionary this transaction trained, else the latest committed one, else None."""
    trained = _trained_here(conn)
    if trained is not None:
        return trained
    kept = _kept(conn.engine)
    if kept.latest is not None:
        return kept.by_id[kept.latest]
    return _latest_stored(conn)


def _latest_stored(conn: Connection) -> zstandard.ZstdCompressionDict | None:
    """The newest dictionary committed, kept from now on; None when there is none."""
    d = t.event_dictionaries.c
    row = conn.execute(sa.select(d.id, d.content).order_by(d.id.desc()).limit(1)).first()
    return None if row is None else _kept(conn.engine).keep(row.id, row.content)


def _train_now(conn: Connection, texts: Sequence[str]) -> zstandard.ZstdCompressionDict | None:
    """The dictionary trained on the latest `TRAINING_EVENTS` events of the store and of
    `texts` (the batch, after them), stored in this transaction; None while there are
    fewer, while another writer trains one, or when they cannot be trained on."""
    e = t.events.c
    held = sa.select(sa.literal(1)).select_from(t.events).limit(TRAINING_EVENTS).subquery()
    stored = conn.execute(sa.select(sa.func.count()).select_from(held)).scalar_one()
    if stored + len(texts) < TRAINING_EVENTS or not try_advisory_xact_lock(conn, _TRAINING_LOCK):
        return None
    # Another writer may have trained one and committed between this writer's look and the
    # lock (then free again): that one is used, never a second.
    committed = _latest_stored(conn)
    if committed is not None:
        return committed
    batch = texts[-TRAINING_EVENTS:]
    wanted = TRAINING_EVENTS - len(batch)
    latest = conn.execute(sa.select(e.payload_zstd).order_by(e.seq.desc()).limit(wanted))
    sample = [text.encode() for text in [*unpack(conn, latest.scalars().all()), *batch]]
    d = t.event_dictionaries.c
    ident = (conn.execute(sa.select(sa.func.max(d.id))).scalar() or 0) + 1
    try:
        dictionary = _prepared(train(sample, ident))
    except zstandard.ZstdError:
        return None
    row = {
        "id": ident,
        "content": dictionary.as_bytes(),
        "events": len(sample),
        "trained_at": datetime.now(UTC),
    }
    if not insert_rows_ignoring(conn, t.event_dictionaries, [row], "id"):
        return _dictionary(conn, ident)  # committed by another writer meanwhile
    kept(conn, _TRAINED, lambda: (ident, dictionary))
    return dictionary


def _prepared(dictionary: zstandard.ZstdCompressionDict) -> zstandard.ZstdCompressionDict:
    """`dictionary` digested once for compressing at `LEVEL`: a batch's compressor then
    starts from it at no cost (else 0.1 ms a compressor, what a single event costs)."""
    dictionary.precompute_compress(level=LEVEL)
    return dictionary


def _trained_here(conn: Connection) -> zstandard.ZstdCompressionDict | None:
    """The dictionary this transaction trained, not committed yet (so kept by no process)."""
    held = kept_if_any(conn, _TRAINED)
    if held is None:
        return None
    dictionary: zstandard.ZstdCompressionDict = held[1]
    return dictionary


def _dictionary(conn: Connection, ident: int) -> zstandard.ZstdCompressionDict:
    """Dictionary `ident`: this transaction's own, one this process read committed, or the
    stored row (committed, since this transaction did not train it)."""
    held = kept_if_any(conn, _TRAINED)
    if held is not None and held[0] == ident:
        dictionary: zstandard.ZstdCompressionDict = held[1]
        return dictionary
    kept = _kept(conn.engine)
    found = kept.by_id.get(ident)
    if found is not None:
        return found
    d = t.event_dictionaries.c
    content = conn.execute(sa.select(d.content).where(d.id == ident)).scalar_one()
    return kept.keep(ident, content)
