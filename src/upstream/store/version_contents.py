"""Dataset versions' fields and facets, stored once per distinct content.

Producers repeat themselves: a COMPLETE restates its START's outputs, and every run of a job
writes the schema and facets the last one did. A version row names its content
(`version_contents`) by the hash of its text, and a content is written once: a write stages
the contents its versions name (`stage`), and stores those not known yet in the short last
step of its transaction (`write_pending_contents`, called by
`upstream.store.writer.write_shared_rows`), in id order, ignoring any a concurrent writer
stored meanwhile, so writers never wait on each other's new contents for a whole batch.

Each process remembers, per database, the contents it saw committed (a bounded LRU): a
content named again is not written at all. A content row is never deleted (not by a
rebuild, not by a prune), so what a process remembers stays true; a commit that fails after
its contents were remembered forgets them again (`_forget_failed`).
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from upstream.model.json_text import dumps
from upstream.store import schema as t
from upstream.store.dialect import id_filters, insert_rows_ignoring
from upstream.store.packed_facets import packed_rows, unpacked_rows
from upstream.store.per_engine import PerEngine
from upstream.store.transaction_state import kept, kept_if_any

#: Content ids each process remembers per database (16 bytes and a dictionary entry each).
KNOWN_LIMIT = 65_536

_PENDING = "upstream.version_contents.pending"
_COMMITTING = "upstream.version_contents.committing"


def content_id(fields: Any, facets: Any) -> uuid.UUID:
    """The id of a version's content: 128 bits of the SHA-256 of its JSON text, key order
    kept, so two versions share a row only when each reads back exactly what it stated."""
    digest = hashlib.sha256(dumps([fields, facets]).encode()).digest()
    return uuid.UUID(bytes=digest[:16])


class _Known:
    """The content ids committed to one database that this process has seen (LRU)."""

    def __init__(self) -> None:
        self._ids: OrderedDict[uuid.UUID, None] = OrderedDict()
        self._lock = threading.Lock()

    def unknown(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        with self._lock:
            missing = set()
            for key in ids:
                if key in self._ids:
                    self._ids.move_to_end(key)
                else:
                    missing.add(key)
            return missing

    def add(self, ids: Collection[uuid.UUID]) -> None:
        with self._lock:
            for key in ids:
                self._ids[key] = None
                self._ids.move_to_end(key)
            while len(self._ids) > KNOWN_LIMIT:
                self._ids.popitem(last=False)

    def discard(self, ids: Collection[uuid.UUID]) -> None:
        with self._lock:
            for key in ids:
                self._ids.pop(key, None)


def _listened(engine: Engine) -> _Known:
    """`engine`'s remembered contents, with the events that fill them."""
    sa.event.listen(engine, "commit", _remember_committed)
    sa.event.listen(engine, "rollback", _drop_uncommitted)
    sa.event.listen(engine, "begin", _committed)
    sa.event.listen(engine, "handle_error", _forget_failed)
    return _Known()


#: Each engine's remembered contents, made on first use.
_known: PerEngine[_Known] = PerEngine(_listened)


@dataclass
class _Pending:
    """The contents a transaction's versions name, kept until `write_pending_contents`."""

    #: Contents not known to be stored, by id.
    rows: dict[uuid.UUID, dict[str, Any]] = field(default_factory=dict)
    #: Contents the transaction stored or found stored: remembered when it commits.
    stored: set[uuid.UUID] = field(default_factory=set)


def _pending(conn: Connection) -> _Pending:
    return kept(conn, _PENDING, _Pending)


def stage(conn: Connection, contents: Mapping[uuid.UUID, tuple[Any, Any]]) -> None:
    """Note the contents (id: fields, facets) this transaction's versions name; those this
    process does not know to be stored are written by `write_pending_contents`."""
    pending = _pending(conn)
    for key in _known(conn.engine).unknown(contents.keys() - pending.rows.keys()):
        fields, facets = contents[key]
        pending.rows[key] = {"id": key, "fields": fields, "facets": facets}


def write_pending_contents(conn: Connection) -> None:
    """Store the staged contents not stored yet, in id order (a stable lock order)."""
    held: _Pending | None = kept_if_any(conn, _PENDING)
    if held is None or not held.rows:
        return
    ordered = [held.rows[key] for key in sorted(held.rows)]
    insert_rows_ignoring(
        conn, t.version_contents, packed_rows(conn, t.version_contents, ordered), "id"
    )
    held.stored.update(held.rows)
    held.rows.clear()


def read_contents(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, tuple[Any, Any]]:
    """The fields and facets of each content among `ids` (staged by this transaction, or
    stored)."""
    held: _Pending | None = kept_if_any(conn, _PENDING)
    staged = held.rows if held is not None else {}
    found = {key: (staged[key]["fields"], staged[key]["facets"]) for key in ids if key in staged}
    c = t.version_contents.c
    for matches in id_filters(conn, c.id, sorted(set(ids) - found.keys())):
        query = sa.select(c.id, c.fields, c.facets).where(matches)
        rows = [dict(row) for row in conn.execute(query).mappings()]
        unpacked_rows(conn, t.version_contents, rows)
        found.update({row["id"]: (row["fields"], row["facets"]) for row in rows})
    return found


def _info(conn: Connection | None) -> dict[Any, Any] | None:
    """`conn.info`, or None for a connection lost or without one (its state goes with it)."""
    if conn is None:
        return None
    try:
        return conn.info
    except sa.exc.SQLAlchemyError:
        return None


def _remember_committed(conn: Connection) -> None:
    """On commit: the contents the transaction stored are known from now on."""
    info = _info(conn)
    held = info.pop(_PENDING, None) if info is not None else None
    # Kept by `transaction_state.kept`: (the transaction, its contents).
    pending: _Pending | None = held[1] if held is not None else None
    if info is None or pending is None or not pending.stored:
        return
    _known(conn.engine).add(pending.stored)
    info[_COMMITTING] = pending.stored


def _committed(conn: Connection) -> None:
    """A new transaction began: the last one's commit went through."""
    info = _info(conn)
    if info is not None:
        info.pop(_COMMITTING, None)


def _drop_uncommitted(conn: Connection) -> None:
    info = _info(conn)
    if info is not None:
        info.pop(_PENDING, None)


def _forget_failed(context: sa.engine.ExceptionContext) -> None:
    """A commit that failed after its contents were remembered: forget them."""
    info = _info(context.connection)
    failed = info.pop(_COMMITTING, None) if info is not None else None
    if failed and context.connection is not None:
        _known(context.connection.engine).discard(failed)
