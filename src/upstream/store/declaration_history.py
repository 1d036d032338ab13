"""Every declaration kept: lineage as a JobEvent or DatasetEvent stated it, at its event time.

`edges`, `relations` and `flows` hold the declarations in force now (the latest by event time
replaces the earlier one, design §3.2), which is what every current answer reads. The history tables
hold each declaration ever accepted, with the time it was replaced, so an answer `asOf` a past
time uses the declaration that stood then (design §4.5; `upstream.store.window` reads them).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.facts import Declaration
from upstream.model.flow_rules import Access, OwnerLineage, derive_flows
from upstream.model.identity import stable_id
from upstream.model.timeexpr import in_utc
from upstream.store import schema as t
from upstream.store.flow_writer import dataset_edge, flow_row
from upstream.store.packed_facets import packed_rows

Row = dict[str, Any]


def declaration_id(scope: str, owner: uuid.UUID, declared_at: datetime) -> uuid.UUID:
    """One declaration per owner and event time: a second one at the same time replaces it."""
    return stable_id("declaration", scope, owner, in_utc(declared_at).isoformat())


def record_declaration(
    conn: Connection,
    declaration: Declaration,
    edge_rows: Iterable[Row],
    relation_rows: Iterable[Row],
) -> None:
    """Keep `declaration` with its rows, and give each of its owner's declarations the time
    the next one replaced it. Arrival order does not matter: a late, older declaration takes
    its place in the history (and the current tables keep the newer one)."""
    decl_id = declaration_id(declaration.scope, declaration.owner.id, declaration.event_time)
    edge_rows, relation_rows = list(edge_rows), list(relation_rows)
    for table in (t.declared_flows, t.declared_edges, t.declared_relations):
        conn.execute(table.delete().where(table.c.declaration_id == decl_id))
    conn.execute(t.declarations.delete().where(t.declarations.c.id == decl_id))
    conn.execute(
        t.declarations.insert().values(
            id=decl_id,
            scope=declaration.scope,
            owner_id=declaration.owner.id,
            declared_at=declaration.event_time,
            replaced_at=None,
            has_lineage_facet=declaration.has_lineage_facet,
        )
    )
    flows = _flows(declaration, edge_rows, relation_rows)
    if flows:
        conn.execute(
            t.declared_flows.insert(), [{**row, "declaration_id": decl_id} for row in flows]
        )
    for table, rows in ((t.declared_edges, edge_rows), (t.declared_relations, relation_rows)):
        copies = {}
        for row in rows:
            copy = {**row, "id": stable_id("declared", row["id"], decl_id)}
            copies[copy["id"]] = {**copy, "declaration_id": decl_id}
        if copies:
            conn.execute(table.insert(), packed_rows(conn, table, list(copies.values())))
    _chain(conn, declaration.scope, declaration.owner.id)


def _flows(declaration: Declaration, edge_rows: list[Row], relation_rows: list[Row]) -> list[Row]:
    """The declaration's flows by the rules that derive the current ones (`flow_rules`)."""
    lineage = OwnerLineage(
        scope=declaration.scope,
        owner_id=declaration.owner.id,
        run_id=None,
        no_product=declaration.scope == "dataset" or declaration.has_lineage_facet,
        accesses=tuple(
            Access(r["dataset_id"], r["job_id"], r["access"], r["origin"]) for r in relation_rows
        ),
        edges=tuple(dataset_edge(r) for r in edge_rows),
    )
    return [flow_row(lineage, flow) for flow in derive_flows(lineage)]


def _chain(conn: Connection, scope: str, owner: uuid.UUID) -> None:
    """Each declaration of `owner` is in force until the next one's event time."""
    d = t.declarations.c
    stored = conn.execute(
        sa.select(d.id, d.declared_at, d.replaced_at)
        .where(d.owner_id == owner, d.scope == scope)
        .order_by(d.declared_at)
    ).all()
    for (decl_id, _, replaced_at), following in zip(stored, [*stored[1:], None], strict=True):
        until = following.declared_at if following is not None else None
        if until != replaced_at:
            conn.execute(t.declarations.update().where(d.id == decl_id).values(replaced_at=until))
