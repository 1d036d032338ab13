"""The raw events as the store keeps them: each event's compact JSON text, compressed by zstd
with a dictionary trained on the store's own events (`event_dictionaries`). Every writer and
reader of `events.payload_zstd` goes through `pack` and `unpack`, which give back the text
byte for byte.

A payload is one zstd frame, and the frame names its dictionary (zstd's dictionary id, the
row's id): dictionary 0, none, for the events a store keeps before it has one. The
dictionary is trained off the writes' path: once a write brings the store to
`TRAINING_EVENTS` events (as this process counts them), a thread of the process looks at the
store after the write's commit and, when it holds that many and no dictionary yet, trains
one on the latest of them (about 0.6 s of CPU) and stores it in a transaction of its own
(`_look`). Writes meanwhile compress without a dictionary and wait for nothing; those after
it use it. Only the process that takes a lock trains (PostgreSQL's advisory lock, a lock on
a file beside an SQLite file); the others go on without it, and look again soon. A
dictionary is never replaced (one trained on a workload's first 2,000 events keeps it within
1 % of one trained on a quarter of them, docs/performance.md); a store could train another,
and each payload would still name its own.

Each process keeps, per database (`per_engine`), the dictionaries it read committed and,
until it knows one, how many events it is to store before it looks again: only its first
write looks in the write's transaction (two statements: the dictionary, how many events the
store holds); the others send no statement for it, and the looks that follow run on their
own thread, every `LOOK_EVERY` events the process stores, sooner when the store is due to
train, after the next write when another process is training.
"""

from __future__ import annotations

import fcntl
import logging
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlalchemy as sa
import zstandard
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import insert_rows_ignoring, try_advisory_xact_lock
from upstream.store.engine import sqlite_file
from upstream.store.per_engine import PerEngine
from upstream.store.transaction_state import after_commit, kept

if TYPE_CHECKING:
    from upstream.store.engine import Store

log = logging.getLogger("upstream.store")

#: zstd's compression level: 3, its default, compressed the events as small as 19 at a
#: twentieth of its CPU (`python -m benchmarks.raw_options`).
LEVEL = 3
#: The events a dictionary is trained on, and how many a store holds when it trains one.
TRAINING_EVENTS = 2000
#: Events a process stores, before the store has a dictionary, between two looks for one
#: (another process may have trained it): each look is two statements off the writes' path,
#: and a process stores at most this many events without the dictionary another trained.
LOOK_EVERY = 50
#: A dictionary's size: 64 kB, about four events' text.
DICTIONARY_BYTES = 65_536
#: The advisory lock a PostgreSQL process holds while it trains a dictionary.
_TRAINING_LOCK = uuid.UUID("6d1c55c7-2f69-4a4e-9d43-2b1c1a1b0e25")
#: The events a transaction packed without a dictionary (`pack`), counted once it commits.
_PACKED = "upstream.payloads.packed"


class StoredEvent(NamedTuple):
    """A stored event as a rebuild or a re-derivation replays it: its text unpacked."""

    seq: int
    payload: str
    received_at: datetime


@dataclass
class _Dictionaries:
    """What this process knows of one database's dictionaries: those it read committed, by
    id, and, until it knows one, how far the store is from training (see the module)."""

    by_id: dict[int, zstandard.ZstdCompressionDict]
    latest: int | None = None
    #: Events this process is to commit without a dictionary before it looks again; None
    #: before its first look.
    due: int | None = None
    #: Events this process packed without a dictionary, and committed, since its last look.
    since: int = 0
    #: A look runs on its thread; `again`: another is due once it ends.
    looking: bool = False
    again: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, ident: int, content: bytes) -> zstandard.ZstdCompressionDict:
        dictionary = _prepared(zstandard.ZstdCompressionDict(content))
        with self.lock:
            self.by_id.setdefault(ident, dictionary)
            self.latest = max(ident, self.latest or 0)
            return self.by_id[ident]

    def current(self) -> zstandard.ZstdCompressionDict | None:
        with self.lock:
            return None if self.latest is None else self.by_id[self.latest]

    def looked(self, due: int) -> None:
        """A look found no dictionary: the next is due after `due` more events."""
        with self.lock:
            self.due, self.since = due, 0

    def committed(self, packed: int) -> bool:
        """Count `packed` events committed without a dictionary; True when a look is due
        and none runs (the caller starts one)."""
        with self.lock:
            if self.latest is not None or self.due is None:
                return False
            self.since += packed
            if self.since < self.due:
                return False
            if self.looking:
                self.again = True
                return False
            self.looking = True
            return True

    def look_ended(self) -> bool:
        """True when another look is due (the caller looks again)."""
        with self.lock:
            self.looking, again, self.again = self.again, self.again, False
            return again


_kept: PerEngine[_Dictionaries] = PerEngine(lambda _engine: _Dictionaries({}))


def pack(conn: Connection, texts: Sequence[str]) -> list[bytes]:
    """Each event text of a batch as the store keeps it, compressed with the store's
    dictionary when this process knows one (its first write looks for it)."""
    dictionary = _known_dictionary(conn)
    if dictionary is None:
        packed: list[int] = kept(conn, _PACKED, list)
        packed.append(len(texts))
        after_commit(conn, _PACKED, lambda store: _committed(store, sum(packed)))
        compressor = zstandard.ZstdCompressor(level=LEVEL)
    else:
        compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    return [compressor.compress(text.encode()) for text in texts]


def unpack(conn: Connection, values: Sequence[bytes]) -> list[str]:
    """The event texts of stored payloads, byte for byte as they were packed."""
    return [raw.decode() for raw in decompressed(conn, values)]


def compressor(conn: Connection) -> zstandard.ZstdCompressor:
    """A compressor with the store's dictionary (none while it has none), for other texts
    made of what events hold (`store.packed_facets`): it never trains one."""
    dictionary = _known_dictionary(conn)
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


def _known_dictionary(conn: Connection) -> zstandard.ZstdCompressionDict | None:
    """The dictionary this process knows for the store; its first write looks for it."""
    known = _kept(conn.engine)
    dictionary = known.current()
    if dictionary is None and known.due is None:
        dictionary = _first_look(conn, known)
    return dictionary


def stored_events(conn: Connection, rows: Sequence[Any]) -> list[StoredEvent]:
    """Rows of (seq, payload_zstd, received_at) with their payloads unpacked."""
    texts = unpack(conn, [row[1] for row in rows])
    return [StoredEvent(row[0], text, row[2]) for row, text in zip(rows, texts, strict=True)]


def train(texts: Sequence[bytes], ident: int) -> zstandard.ZstdCompressionDict:
    """A dictionary of id `ident` trained on `texts` (raises zstandard.ZstdError when they
    are too few or too alike to train on)."""
    return zstandard.train_dictionary(DICTIONARY_BYTES, list(texts), dict_id=ident, level=LEVEL)


def _first_look(conn: Connection, known: _Dictionaries) -> zstandard.ZstdCompressionDict | None:
    """The store's dictionary, read in this process's first write; else None, and how many
    events the store holds is noted."""
    found = _latest_stored(conn, known)
    if found is None:
        known.looked(_due(_events_held(conn)))
    return found


def _committed(store: Store, packed: int) -> None:
    """After a write that packed `packed` events without a dictionary: look for one (and
    train it when due) on a thread of its own when it is time."""
    known = _kept(store.engine)
    if known.committed(packed):
        store.in_background(lambda: _looking(store, known), "upstream-dictionary")


def _looking(store: Store, known: _Dictionaries) -> None:
    while True:
        try:
            _look(store, known)
        except Exception:  # the writes go on without a dictionary; a later look tries again
            log.exception("looking for the raw events' dictionary failed")
        if not known.look_ended():
            return


def _look(store: Store, known: _Dictionaries) -> None:
    """Keep the store's dictionary when it has one; else, when it holds `TRAINING_EVENTS`
    events, train one on the latest of them and store it (unless another process does)."""
    with store.read(primary=True) as conn:
        if _latest_stored(conn, known) is not None:
            return
        held = _events_held(conn)
        if held < TRAINING_EVENTS:
            known.looked(_due(held))
            return
        with _claimed(conn) as claimed:
            if not claimed:
                known.looked(1)  # another process trains: its dictionary is stored soon
                return
            known.looked(LOOK_EVERY)  # should the training fail
            trained = _train(store, conn)
    if trained is None:
        return
    if trained[1]:
        known.keep(1, trained[0])
    else:  # another process stored its own meanwhile
        with store.read(primary=True) as conn:
            _latest_stored(conn, known)


def _train(store: Store, conn: Connection) -> tuple[bytes, bool] | None:
    """The dictionary (its content) trained on the latest events `conn` reads, and whether
    it was stored (else another process's was); None when they cannot be trained on."""
    e = t.events.c
    latest = conn.execute(sa.select(e.payload_zstd).order_by(e.seq.desc()).limit(TRAINING_EVENTS))
    sample = [text.encode() for text in unpack(conn, latest.scalars().all())]
    try:
        content = train(sample, 1).as_bytes()  # the store's first
    except zstandard.ZstdError as exc:
        log.warning("the raw events' dictionary could not be trained: %s", exc)
        return None
    row = {"id": 1, "content": content, "events": len(sample), "trained_at": datetime.now(UTC)}
    stored = store.write(
        lambda writing: insert_rows_ignoring(writing, t.event_dictionaries, [row], "id")
    )
    return content, bool(stored)


@contextmanager
def _claimed(conn: Connection) -> Iterator[bool]:
    """Whether this process may train the dictionary, and no other one meanwhile: on
    PostgreSQL it holds an advisory lock until the look's transaction ends; on an SQLite file
    a lock on a file beside it (`…-dictionary-lock`) until the body ends (an in-memory
    database has one process)."""
    if conn.dialect.name == "postgresql":
        yield try_advisory_xact_lock(conn, _TRAINING_LOCK)
        return
    path = sqlite_file(conn.engine.url.render_as_string(hide_password=False))
    if path is None:
        yield True
        return
    with open(f"{path}-dictionary-lock", "a") as handle:  # closing it lets go of the lock
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def _latest_stored(conn: Connection, known: _Dictionaries) -> zstandard.ZstdCompressionDict | None:
    """The newest dictionary the store holds, now kept by this process; None when none."""
    d = t.event_dictionaries.c
    row = conn.execute(sa.select(d.id, d.content).order_by(d.id.desc()).limit(1)).first()
    return None if row is None else known.keep(row.id, row.content)


def _due(held: int) -> int:
    """Events to store before the next look, when the store holds `held`."""
    return min(TRAINING_EVENTS - held, LOOK_EVERY) if held < TRAINING_EVENTS else 1


def _events_held(conn: Connection) -> int:
    """How many events the store holds, counted up to `TRAINING_EVENTS`."""
    held = sa.select(sa.literal(1)).select_from(t.events).limit(TRAINING_EVENTS).subquery()
    return int(conn.execute(sa.select(sa.func.count()).select_from(held)).scalar_one())


def _prepared(dictionary: zstandard.ZstdCompressionDict) -> zstandard.ZstdCompressionDict:
    """`dictionary` digested once for compressing at `LEVEL`: a batch's compressor then
    starts from it at no cost (else 0.1 ms a compressor, what a single event costs)."""
    dictionary.precompute_compress(level=LEVEL)
    return dictionary


def _dictionary(conn: Connection, ident: int) -> zstandard.ZstdCompressionDict:
    """Dictionary `ident`: one this process read committed, or the stored row."""
    known = _kept(conn.engine)
    found = known.by_id.get(ident)
    if found is not None:
        return found
    d = t.event_dictionaries.c
    content = conn.execute(sa.select(d.content).where(d.id == ident)).scalar_one()
    return known.keep(ident, content)
