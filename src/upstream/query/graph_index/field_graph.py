"""The field graph of the index (design §6): every stored edge with a field at one end or both,
as integer columns, with compressed sparse row adjacency over (dataset, field) nodes.

It is kept as the store keeps it (design §6, "Repeated lineage once"): each lineage set's
edges once, and apart from them the links that say who stated the set — a run, or a job's or a
dataset's declaration, current or of the history with the interval it was in force. Precedence
between origins (design §3.2, §3.3) was resolved when the set was written, so an edge here is
one an answer may show; whether it does depends on its links: one in force and in the
question's window makes the set's edges count.

- Field names are interned (`FieldNumberings.fields`), as are the transformations' JSON texts;
  answers turn numbers back into names from these tables, without a statement.
- A node is a (dataset number, field number) pair, kept as one 64-bit key; a version numbers
  its nodes by the sorted keys, so the nodes of one dataset are one range of numbers.
- A version is never changed. A change drops the links of the changed runs and owners and
  reads theirs again; a set no link names any more is dropped, and a set a new link names is
  read only if the version does not hold it already (its id is the hash of its content). A
  declaration's history is read again whole for its owner.

Bytes: an edge of a set holds 33 bytes of columns and 16 of adjacency (49); a link 30 and
8 (38); a node 8 for its key and 16 for its place in the adjacency (24). `FieldGraph.nbytes`
counts them (the small benchmark workload: 5,465 field edges, 1,335 links, 3,569 nodes,
403 KB).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.model.facts import ORIGIN_RANK
from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.graph import (
    Keyed,
    Numberings,
    Replaced,
    Table,
    _grown,
    _interval,
    _packed,
)
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.store import graph_rows

if TYPE_CHECKING:
    import uuid

Ints = npt.NDArray[np.int64]
#: The origins of field edges, in the order their codes number them.
ORIGINS: tuple[str, ...] = tuple(ORIGIN_RANK)
_FIELD_BITS = 32


@dataclass(frozen=True)
class FieldNumberings:
    """The numberings every version of one process's field graph shares: field names,
    lineage sets (and declarations' keys) and transformations' JSON texts."""

    fields: Numbering
    sets: Numbering
    transformations: Numbering


@dataclass(frozen=True)
class FieldGraph:
    """The field edges at one position of the change log."""

    names: FieldNumberings
    #: owner, set, run (NONE: declared), of_run, current, since, until.
    links: Table
    #: set, origin, source/target dataset and field (NONE: a job end, or no field),
    #: transformations.
    edges: Table
    #: Each node's key, sorted: dataset number << 32 | field number.
    node_keys: Ints
    #: Each edge's source and target node (NONE where that end has no field).
    source_node: npt.NDArray[np.int32]
    target_node: npt.NDArray[np.int32]
    links_by_set: Adjacency
    by_source: Adjacency
    by_target: Adjacency

    def nodes_of(self, datasets: Ints) -> Ints:
        """Every node of the dataset numbers `datasets`."""
        keys = self.node_keys
        first = np.searchsorted(keys, datasets << _FIELD_BITS)
        last = np.searchsorted(keys, (datasets + 1) << _FIELD_BITS)
        counts = last - first
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        nodes: Ints = np.repeat(first, counts) + offsets
        return nodes

    def held_nodes(self, datasets: Ints, fields: Ints) -> Ints:
        """The nodes of the (dataset number, field number) pairs the graph has one for."""
        if not len(self.node_keys):
            return np.zeros(0, dtype=np.int64)
        keys = (datasets << _FIELD_BITS) | fields
        at = np.minimum(np.searchsorted(self.node_keys, keys), len(self.node_keys) - 1)
        found: Ints = at[self.node_keys[at] == keys]
        return found

    def dataset_of(self, nodes: Ints) -> Ints:
        found: Ints = self.node_keys[nodes] >> _FIELD_BITS
        return found

    def field_of(self, nodes: Ints) -> Ints:
        found: Ints = self.node_keys[nodes] & ((1 << _FIELD_BITS) - 1)
        return found

    @property
    def nbytes(self) -> int:
        adjacency = (self.links_by_set, self.by_source, self.by_target)
        held = self.links.nbytes + self.edges.nbytes + self.node_keys.nbytes
        held += self.source_node.nbytes + self.target_node.nbytes
        return held + sum(a.nbytes for a in adjacency)


def load(conn: Connection, ids: Numberings) -> FieldGraph:
    """Every field edge and link as `conn`'s snapshot holds them."""
    names = FieldNumberings(Numbering(), Numbering(), Numbering())
    history_links, history_edges = graph_rows.field_history_rows(conn)
    link_chunks = chain(graph_rows.field_link_rows(conn), [history_links])
    links = _packed(lambda rows, ids: _links(rows, ids, names), link_chunks, ids)
    chunks = chain(graph_rows.field_set_edge_rows(conn), [history_edges])
    edges = _packed(lambda rows, ids: _edges(rows, ids, names), chunks, ids)
    return _made(names, links, edges)


def applied(
    conn: Connection,
    fields: FieldGraph,
    ids: Numberings,
    runs: Collection[uuid.UUID],
    owners: Collection[uuid.UUID],
) -> FieldGraph:
    """`fields` with the links of `runs` and of the declarations of `owners` read again,
    and the sets they name that it does not hold."""
    if not (runs or owners):
        return fields
    names = fields.names
    changed = [ids.owners.known(str(i)) for i in (*runs, *owners)]
    gone = np.array([n for n in changed if n is not None], dtype=np.int32)
    history_links, history_edges = graph_rows.field_history_rows(conn, runs, owners)
    current = [row for rows in graph_rows.field_link_rows(conn, runs, owners) for row in rows]
    fresh = _links([*current, *history_links], ids, names)
    # The links are appended in place and their adjacency shares the old one's arrays, as
    # the graph's tables are (design §6).
    dropped = np.flatnonzero(np.isin(fields.links["owner"], gone))
    keyed: Keyed = {"links_by_set": (lambda table: table["set"], len(names.sets))}
    links, by = _grown(
        Replaced(fields.links, dropped, fresh), keyed, {"links_by_set": fields.links_by_set}
    )
    linked = links["set"][links.held]
    # A declaration read again may keep its key with other edges: its edges are read again.
    redeclared = np.array([names.sets.number(row[1]) for row in history_links], dtype=np.int32)
    kept = np.isin(fields.edges["set"], linked) & ~np.isin(fields.edges["set"], redeclared)
    edges = fields.edges.where(kept)
    named = np.unique(names.sets.numbers(row[1] for row in current))
    missing = {names.sets.texts[n] for n in named[~np.isin(named, edges["set"])].tolist()}
    read = [row for rows in graph_rows.field_set_edge_rows(conn, missing) for row in rows]
    added = _edges([*read, *history_edges], ids, names)
    if len(added) or not kept.all():
        return _made(names, links.where(links.held), edges.plus(added))
    # Most changes link runs to sets the graph holds: the edges, their nodes and their
    # adjacency stay as they are, and only the links change.
    return replace(fields, links=links, links_by_set=by["links_by_set"])


def _links(rows: Sequence[Sequence[Any]], ids: Numberings, names: FieldNumberings) -> Table:
    return Table(
        {
            "owner": ids.owners.numbers(row[0] for row in rows),
            "set": names.sets.numbers(row[1] for row in rows),
            "run": ids.runs.numbers(row[2] for row in rows),
            "of_run": np.fromiter((bool(row[3]) for row in rows), dtype=np.bool_, count=len(rows)),
            **_interval(rows),
        }
    )


def _edges(rows: Sequence[Sequence[Any]], ids: Numberings, names: FieldNumberings) -> Table:
    codes = {origin: code for code, origin in enumerate(ORIGINS)}
    return Table(
        {
            "set": names.sets.numbers(row[0] for row in rows),
            "origin": np.fromiter((codes[row[1]] for row in rows), dtype=np.int8, count=len(rows)),
            "source_dataset": ids.datasets.numbers(row[2] for row in rows),
            "source_field": names.fields.numbers(row[3] for row in rows),
            "target_dataset": ids.datasets.numbers(row[4] for row in rows),
            "target_field": names.fields.numbers(row[5] for row in rows),
            "transformations": names.transformations.numbers(row[6] for row in rows),
        }
    )


def _keys(datasets: npt.NDArray[np.int32], fields: npt.NDArray[np.int32]) -> Ints:
    """Each end's node key; -1 where the end has no field."""
    keys: Ints = np.where(
        fields == NONE, -1, (datasets.astype(np.int64) << _FIELD_BITS) | fields.astype(np.int64)
    )
    return keys


def _made(names: FieldNumberings, links: Table, edges: Table) -> FieldGraph:
    source = _keys(edges["source_dataset"], edges["source_field"])
    target = _keys(edges["target_dataset"], edges["target_field"])
    node_keys = np.unique(np.concatenate([source[source >= 0], target[target >= 0]]))

    def nodes(keys: Ints) -> npt.NDArray[np.int32]:
        found = np.searchsorted(node_keys, keys).astype(np.int32)
        found[keys < 0] = NONE
        return found

    source_node, target_node = nodes(source), nodes(target)
    return FieldGraph(
        names=names,
        links=links,
        edges=edges,
        node_keys=node_keys,
        source_node=source_node,
        target_node=target_node,
        links_by_set=Adjacency(links["set"], len(names.sets)),
        by_source=Adjacency(source_node, len(node_keys)),
        by_target=Adjacency(target_node, len(node_keys)),
    )
