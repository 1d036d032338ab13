"""Repeated lineage stored once (design §6): the edges one owner states for one output form a
lineage set, kept once per distinct content and linked to every owner that stated it.

An owner is a run, or a job's or a dataset's declaration. Ten runs of a job that send the same
`columnLineage` make one set and ten links. The rules here decide what a set holds, what its
content hash is, and how a later event of the same owner changes the set it links to:

- Per run and output dataset only the highest-ranked origin stands (design §3.2): edges of a
  lower rank are dropped, from what was stored as well as from what arrives.
- Edges of equal rank accumulate across the owner's events. Two edges with the same ends are
  one edge: the one stored first stays (re-sent edges change nothing).
- A set's edges are kept in one canonical order, so its hash does not depend on the order
  edges or events arrived in.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

from upstream.model import json_text
from upstream.model.facts import ORIGIN_RANK, DatasetNode, EdgeFact, JobNode, Node
from upstream.model.identity import stable_id


class SetEdge(NamedTuple):
    """One edge of a set: an edge without its owner (scope, run, job), which the link names."""

    origin: str
    implied: bool
    source_type: str
    source_dataset_id: uuid.UUID | None
    source_field: str | None
    source_job_id: uuid.UUID | None
    source_run_id: uuid.UUID | None
    target_type: str
    target_dataset_id: uuid.UUID | None
    target_field: str | None
    target_job_id: uuid.UUID | None
    target_run_id: uuid.UUID | None
    transformations: list[dict[str, Any]]

    @property
    def rank(self) -> int:
        return ORIGIN_RANK[self.origin]

    @property
    def ends(self) -> tuple[object, ...]:
        """What makes two edges of one owner the same edge: their ends, not their origin."""
        return (*self[2:7], *self[7:12])

    def canonical(self) -> str:
        """The edge as canonical JSON text (ids as their text): what the set's hash and order
        are made of. Written as an event's canonical text is, by orjson wherever it writes what
        `json` does: four times faster than `json`, for every edge of every new set."""
        return json_text.canonical(tuple(self)).decode()


class LinkKey(NamedTuple):
    """Who stated a set, for which output: one link per (scope, owner, output dataset).
    The output is None for edges into a job."""

    scope: str
    owner_id: uuid.UUID | None
    target_dataset_id: uuid.UUID | None

    @property
    def id(self) -> uuid.UUID:
        return stable_id("lineage_link", self.scope, self.owner_id, self.target_dataset_id)

    @property
    def precedence(self) -> bool:
        """Precedence between origins applies per run and output dataset (design §3.2)."""
        return (
            self.scope == "run" and self.owner_id is not None and self.target_dataset_id is not None
        )


@dataclass(frozen=True)
class LineageSet:
    """Edges in canonical order, with the hash of their content."""

    edges: tuple[SetEdge, ...]
    checksum: str

    @property
    def id(self) -> uuid.UUID:
        return stable_id("lineage_set", self.checksum)

    @property
    def rank(self) -> int:
        return max((edge.rank for edge in self.edges), default=0)


def set_edge(edge: EdgeFact) -> SetEdge:
    """The owner-free part of an edge fact."""
    return owner_free_edge(
        edge.origin, edge.source, edge.target, edge.transformations, implied=edge.implied
    )


def owner_free_edge(
    origin: str,
    source: Node,
    target: Node,
    transformations: list[dict[str, Any]],
    *,
    implied: bool = False,
) -> SetEdge:
    """An edge as a set holds it, made from its ends before any owner states it."""
    return SetEdge(origin, implied, *_end(source), *_end(target), transformations)


End = tuple[str, uuid.UUID | None, str | None, uuid.UUID | None, uuid.UUID | None]


def _end(node: Node) -> End:
    if isinstance(node, DatasetNode):
        return "dataset", node.dataset.id, node.field, None, None
    assert isinstance(node, JobNode)
    return "job", None, None, node.job.id, node.run_id


def link_key(edge: EdgeFact) -> LinkKey:
    target = edge.target_dataset
    return LinkKey(edge.scope, edge.scope_owner, target.id if target else None)


def lineage_set(edges: Iterable[SetEdge], *, precedence: bool) -> LineageSet:
    """The set `edges` make, in the order they were stated (the first of equal ends stays);
    with `precedence`, only the edges of the highest rank among them."""
    chosen = list(edges)
    if precedence and chosen:
        top = max(edge.rank for edge in chosen)
        chosen = [edge for edge in chosen if edge.rank == top]
    unique: dict[tuple[object, ...], SetEdge] = {}
    for edge in chosen:
        unique.setdefault(edge.ends, edge)
    texts = sorted(((edge.canonical(), edge) for edge in unique.values()), key=lambda te: te[0])
    digest = hashlib.sha256("\n".join(text for text, _ in texts).encode()).hexdigest()
    return LineageSet(tuple(edge for _, edge in texts), digest)


Change = Literal["none", "replace", "merge"]


def change(stored_id: uuid.UUID | None, stored_rank: int, new: LineageSet, key: LinkKey) -> Change:
    """What `new` (edges an owner states for an output now) does to the set it links to:
    nothing (the same set, or outranked by what is stored), replace it (nothing stored, or
    `new` outranks it), or merge with it (equal rank, or no precedence: the stored edges
    are needed)."""
    if stored_id is None:
        return "replace"
    if stored_id == new.id:
        return "none"
    if key.precedence:
        if new.rank < stored_rank:
            return "none"
        if new.rank > stored_rank:
            return "replace"
    return "merge"


def merged(stored: Sequence[SetEdge], new: LineageSet, key: LinkKey) -> LineageSet:
    """The set an owner links to after stating `new` where `stored` stood: stored edges
    first, so an edge stored before stays as it was."""
    return lineage_set([*stored, *new.edges], precedence=key.precedence)


#: An edge as a part states it: (source, target, transformations, implied).
PartEdge = tuple[Node, Node, list[dict[str, Any]], bool]


class EdgePart:
    """The edges one part of an event states for one output, before any owner states them:
    what every event sending the same part (a `columnLineage` facet, a `sql` facet over the
    same datasets) states again, whichever run sends it.

    A part is read once (`upstream.ingest.parts`), and so is what the write needs of its
    edges: the set an owner's edges make when they are exactly one part's is the part's own,
    made the first time an owner states it and taken from here every other time, without
    grouping or hashing the edges again; the datasets they name are listed once. Identity
    is the object's: facts keep the part they came from (`EdgeFact.part`), so an edge
    rewritten after reading (a dataset named by its alias's canonical identity) no longer
    names it. A part's edges join datasets (never jobs, whose runs differ per owner)."""

    __slots__ = ("_sets", "dataset_ids", "datasets", "edges")

    def __init__(self, origin: str, edges: Iterable[PartEdge]) -> None:
        ends = list(edges)
        self.edges = tuple(
            owner_free_edge(origin, source, target, how, implied=implied)
            for source, target, how, implied in ends
        )
        nodes = [node for source, target, _, _ in ends for node in (source, target)]
        if not all(isinstance(node, DatasetNode) for node in nodes):
            raise ValueError("the edges of a part join datasets")
        #: The datasets the edges name, and their ids.
        self.datasets = frozenset(cast(DatasetNode, node).dataset for node in nodes)
        self.dataset_ids = frozenset(ref.id for ref in self.datasets)
        self._sets: dict[bool, LineageSet] = {}

    def lineage_set(self, *, precedence: bool) -> LineageSet:
        """The set this part's edges make (made once per kind of owner)."""
        found = self._sets.get(precedence)
        if found is None:
            found = self._sets[precedence] = lineage_set(self.edges, precedence=precedence)
        return found


class Stated:
    """The edge facts stated for one link, in the order stated, with the owner's run and
    job."""

    __slots__ = ("facts", "job_id", "run_id")

    def __init__(self, run_id: uuid.UUID | None, job_id: uuid.UUID | None) -> None:
        self.run_id = run_id
        self.job_id = job_id
        self.facts: list[EdgeFact] = []

    @property
    def edges(self) -> list[SetEdge]:
        """The edges, as a set holds them."""
        return [set_edge(edge) for edge in self.facts]

    def lineage_set(self, *, precedence: bool) -> LineageSet:
        """The set the edges make: their part's when they all come from one part (one
        event's, or a run's START and COMPLETE sending the same facet), else made here."""
        part = self.facts[0].part
        if part is not None and all(edge.part is part for edge in self.facts):
            return part.lineage_set(precedence=precedence)
        return lineage_set(self.edges, precedence=precedence)


def group_edges(edges: Iterable[EdgeFact]) -> dict[LinkKey, Stated]:
    """Edge facts by the link they belong to. An edge of the same part and owner as the one
    before it belongs to the same link (a part's edges have one output), found without
    making its key."""
    groups: dict[LinkKey, Stated] = {}
    before: EdgeFact | None = None
    stated: Stated | None = None
    for edge in edges:
        if not (stated is not None and before is not None and _same_link(edge, before)):
            key = link_key(edge)
            stated = groups.get(key)
            if stated is None:
                stated = groups[key] = Stated(edge.run_id, edge.job.id if edge.job else None)
        stated.facts.append(edge)
        before = edge
    return groups


def _same_link(edge: EdgeFact, before: EdgeFact) -> bool:
    """Whether `edge` is of the same part, and stated by the same owner, as `before`."""
    return (
        edge.part is not None
        and edge.part is before.part
        and edge.run_id is before.run_id
        and edge.job is before.job
        and edge.scope == before.scope
    )
