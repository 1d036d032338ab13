"""Store the edges a batch states, once per distinct lineage set, linked to their owners.

For each (owner, output) the batch describes, the rules of `upstream.model.lineage_sets` decide
whether the set it links to stays, is replaced, or merges with what arrived. Only a merge
reads stored edges; the usual case (a run's COMPLETE repeating its START, a run repeating the
job's previous run) reads one link row and writes at most one link row. A set's edges are
written once, by the first owner that states it.

Sets are rows batches share (every run of a job states the same one), so a write links its
owners at once but stores the sets it made, and deletes the ones no link uses any more, last,
in the short step that ends its transaction (`write_pending_sets`, called by
`upstream.store.writer.write_shared_rows`): concurrent writers of the same lineage never wait
on each other's new sets for a whole batch. Until then the transaction's readers of set edges
(`set_edges`, `unwritten_sets`) see its sets as if stored. A set no link uses any more (its
owner moved on to another set) is deleted in that step, so the rows stored do not depend on
the order events arrived in. On PostgreSQL the writer that deletes a set locks it first (FOR
UPDATE) and the writer that links to one holds it (FOR KEY SHARE), re-inserting it if a
concurrent writer had just deleted it: a link never points to a missing set.

An edge's transformations are stored once per distinct value (`edge_transformations`, ten
values in all of the medium benchmark's edges), named by the hash of their JSON text: each
write of new sets stores the values its edges name, ignoring those stored already. A value is
never deleted, so an edge's never goes missing.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.facts import EdgeFact
from upstream.model.json_text import dumps
from upstream.model.lineage_sets import (
    LineageSet,
    LinkKey,
    SetEdge,
    change,
    group_edges,
    merged,
)
from upstream.store import schema as t
from upstream.store.dialect import ByIds, for_update, id_filters, insert_rows, insert_rows_ignoring
from upstream.store.months import insert_by_month
from upstream.store.transaction_state import kept, kept_if_any, taken

Row = dict[str, Any]


def store_lineage(conn: Connection, edges: list[EdgeFact], now: datetime) -> None:
    """Link every (owner, output) `edges` describe to the set it stands for now."""
    groups = group_edges(edges)
    if not groups:
        return
    stored = _links(conn, [key.id for key in groups])
    chosen: dict[LinkKey, LineageSet] = {}
    to_merge: list[tuple[LinkKey, LineageSet, uuid.UUID]] = []
    for key, stated in groups.items():
        new = stated.lineage_set(precedence=key.precedence)
        stored_id, stored_rank = stored.get(key.id, (None, 0))
        outcome = change(stored_id, stored_rank, new, key)
        if outcome == "replace":
            chosen[key] = new
        elif outcome == "merge":
            assert stored_id is not None
            to_merge.append((key, new, stored_id))
    if to_merge:
        before = set_edges(conn, {stored_id for _, _, stored_id in to_merge})
        for key, new, stored_id in to_merge:
            result = merged(before.get(stored_id, ()), new, key)
            if result.id != stored_id:
                chosen[key] = result
    pending = _pending(conn)
    for lset in chosen.values():
        pending.sets.setdefault(lset.id, (lset, now))
    _write_links(conn, {key: (groups[key], chosen[key]) for key in chosen}, stored, now)
    pending.left |= {stored[key.id][0] for key in chosen if key.id in stored}


_PENDING = "upstream_pending_sets"


@dataclass
class _Pending:
    """What a transaction's links need of the sets, kept until `write_pending_sets`."""

    #: Each set a link of this transaction points to, with when it was made.
    sets: dict[uuid.UUID, tuple[LineageSet, datetime]] = field(default_factory=dict)
    #: Sets a link of this transaction stopped pointing to: deleted if no link uses them.
    left: set[uuid.UUID] = field(default_factory=set)


def _pending(conn: Connection) -> _Pending:
    """This transaction's pending sets (`transaction_state`: a rolled-back transaction's are
    never written by the next one)."""
    return kept(conn, _PENDING, _Pending)


def unwritten_sets(conn: Connection) -> Mapping[uuid.UUID, LineageSet]:
    """The sets this transaction's links point to that `write_pending_sets` has not stored
    yet: a reader of set edges inside the transaction reads these from here."""
    held: _Pending | None = kept_if_any(conn, _PENDING)
    if held is None:
        return {}
    return {set_id: lset for set_id, (lset, _) in held.sets.items()}


def write_pending_sets(conn: Connection) -> None:
    """Store the sets this transaction's links point to that are not stored yet, then
    delete the sets no link uses any more; each in id order."""
    held: _Pending | None = taken(conn, _PENDING)
    if held is None:
        return
    by_time: dict[datetime, list[LineageSet]] = defaultdict(list)
    for lset, made in held.sets.values():
        by_time[made].append(lset)
    for made, sets in sorted(by_time.items(), key=lambda group: group[0]):
        _write_sets(conn, sets, made)
    _drop_unlinked(conn, held.left)


def _links(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, tuple[uuid.UUID, int]]:
    found: dict[uuid.UUID, tuple[uuid.UUID, int]] = {}
    for rows in _LINKS.run(conn, ids):
        found.update({row.id: (row.set_id, row.rank) for row in rows})
    return found


_LINKS = ByIds(
    t.lineage_links.c.id,
    lambda ids: sa.select(
        t.lineage_links.c.id, t.lineage_links.c.set_id, t.lineage_links.c.rank
    ).where(ids),
)


def set_edges(conn: Connection, set_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[SetEdge]]:
    """The edges of each set (stored, or made by this transaction), in the set's order."""
    e, kept_values = t.lineage_set_edges.c, t.edge_transformations
    found: dict[uuid.UUID, list[SetEdge]] = defaultdict(list)
    unwritten = unwritten_sets(conn)
    for set_id in set(set_ids) & unwritten.keys():
        found[set_id] = list(unwritten[set_id].edges)
    ends = [e[name] for name in SetEdge._fields[:-1]]
    for matches in id_filters(conn, e.set_id, sorted(set(set_ids) - unwritten.keys())):
        query = (
            sa.select(e.set_id, *ends, kept_values.c.transformations)
            .join(kept_values, kept_values.c.id == e.transformations_id)
            .where(matches)
        )
        for row in conn.execute(query.order_by(e.set_id, e.position)):
            found[row[0]].append(SetEdge._make(row[1:]))
    return found


def transformations_id(transformations: Any) -> uuid.UUID:
    """The id of an edge's transformations: 128 bits of the SHA-256 of their JSON text, key
    order kept, so each edge reads back exactly what it stated."""
    return uuid.UUID(bytes=hashlib.sha256(dumps(transformations).encode()).digest()[:16])


def _write_sets(conn: Connection, sets: Collection[LineageSet], now: datetime) -> None:
    """Insert the sets not stored yet, with their edges (a set's content never changes)."""
    unique = {s.id: s for s in sets}
    rows = [
        {
            "id": s.id,
            "checksum": s.checksum,
            "target_dataset_id": s.edges[0].target_dataset_id if s.edges else None,
            "rank": s.rank,
            "created_at": now,
        }
        for _, s in sorted(unique.items())
    ]
    new = insert_rows_ignoring(conn, t.lineage_sets, rows, "id")
    if conn.dialect.name == "postgresql" and rows:
        held = _hold(conn, unique)
        new |= insert_rows_ignoring(
            conn, t.lineage_sets, [r for r in rows if r["id"] not in held], "id"
        )
    edge_rows = []
    values: dict[uuid.UUID, Any] = {}
    for set_id in sorted(new):
        for position, edge in enumerate(unique[set_id].edges):
            row = {"set_id": set_id, "position": position, "rank": edge.rank, **edge._asdict()}
            kept_id = transformations_id(row.pop("transformations"))
            values.setdefault(kept_id, edge.transformations)
            edge_rows.append({**row, "transformations_id": kept_id})
    kept_rows = [{"id": key, "transformations": values[key]} for key in sorted(values)]
    insert_rows_ignoring(conn, t.edge_transformations, kept_rows, "id")
    insert_rows(conn, t.lineage_set_edges, edge_rows)


def _hold(conn: Connection, set_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Lock the stored sets among `set_ids` against deletion until commit; those found."""
    ls = t.lineage_sets.c
    held: set[uuid.UUID] = set()
    for matches in id_filters(conn, ls.id, sorted(set_ids)):
        query = sa.select(ls.id).where(matches).order_by(ls.id)
        held.update(conn.execute(query.with_for_update(read=True, key_share=True)).scalars())
    return held


def _drop_unlinked(conn: Connection, set_ids: Collection[uuid.UUID]) -> None:
    """Delete the sets among `set_ids` that no link uses any more, with their edges."""
    if not set_ids:
        return
    ls, link = t.lineage_sets.c, t.lineage_links.c
    gone: list[uuid.UUID] = []
    for matches in id_filters(conn, ls.id, sorted(set_ids)):
        conn.execute(for_update(conn, sa.select(ls.id).where(matches).order_by(ls.id)))
        unlinked = sa.select(ls.id).where(matches, ~sa.exists().where(link.set_id == ls.id))
        gone.extend(conn.execute(unlinked).scalars())
    for matches in id_filters(conn, t.lineage_set_edges.c.set_id, gone):
        conn.execute(t.lineage_set_edges.delete().where(matches))
    for matches in id_filters(conn, ls.id, gone):
        conn.execute(t.lineage_sets.delete().where(matches))


def _write_links(
    conn: Connection,
    chosen: dict[LinkKey, tuple[Any, LineageSet]],
    stored: dict[uuid.UUID, tuple[uuid.UUID, int]],
    now: datetime,
) -> None:
    """Point existing links at their new set; insert the links that are new."""
    moved = [
        {"b_id": key.id, "b_set": lset.id, "b_rank": lset.rank}
        for key, (_, lset) in sorted(chosen.items(), key=lambda kv: kv[0].id)
        if key.id in stored
    ]
    if moved:
        link = t.lineage_links
        conn.execute(
            link.update()
            .where(link.c.id == sa.bindparam("b_id"))
            .values(set_id=sa.bindparam("b_set"), rank=sa.bindparam("b_rank")),
            moved,
        )
    fresh: list[Row] = [
        {
            "id": key.id,
            "scope": key.scope,
            "owner_id": key.owner_id,
            "job_id": stated.job_id,
            "target_dataset_id": key.target_dataset_id,
            "set_id": lset.id,
            "rank": lset.rank,
            "created_at": now,
        }
        for key, (stated, lset) in sorted(chosen.items(), key=lambda kv: kv[0].id)
        if key.id not in stored
    ]
    insert_by_month(conn, t.lineage_links, fresh, "id")


def delete_links(conn: Connection, scope: str, owner: uuid.UUID) -> None:
    """Forget what `owner` stated (a declaration replaced by a newer one); its sets stay
    only for the other owners that link to them."""
    link = t.lineage_links.c
    dropped = conn.execute(
        t.lineage_links.delete()
        .where(link.scope == scope, link.owner_id == owner)
        .returning(link.set_id)
    ).scalars()
    _drop_unlinked(conn, set(dropped))
