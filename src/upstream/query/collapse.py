"""`collapse` (design §4.2): merge relations that differ only in the collapsed dimensions.

Relations arrive as integer columns (`KeyedRelations`), so grouping and ordering are sorts of
integers: an answer's tens of thousands of relations become Python objects only as the
entries it shows, one per group.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.query.answers import RelationEntry
from upstream.query.graph_index.dataset_walk import distinct, distinct_rows
from upstream.query.graph_index.numbering import NONE
from upstream.query.relation_table import ranked, text_ranks

Dimension = Literal["access", "run", "component"]
DIMENSIONS: tuple[Dimension, ...] = ("access", "component", "run")
Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]
Flags = npt.NDArray[np.bool_]
_ACCESSES = ("read", "write")


class KeyedRelation(NamedTuple):
    """A relation as the response names it: `dataset.<ns>.<name>`, `job.<ns>.<name>` or
    `workflow.<ns>.<name>`, a run id (None: declared) and a component ("" when unnamed)."""

    data: str
    program: str
    access: str
    run: str | None
    component: str


@dataclass(frozen=True)
class KeyedRelations:
    """Relations as the response names them, as columns of codes: `data` into `data_keys`,
    `program` into `program_keys`, `run` into `run_ids` (-1: declared) and `component` into
    `components` (-1 or the code of "": unnamed); `write` is 1 for a write, 0 for a read.
    `run_parts`, when given, holds each run code's JSON text after a comma, `,"<id>"`,
    made already (`query.id_parts`), for an answer written as text."""

    data: Ints
    program: Ints
    write: Ints
    run: Ints
    component: Ints
    data_keys: Sequence[str]
    program_keys: Sequence[str]
    run_ids: Sequence[str]
    components: Sequence[str]
    run_parts: npt.NDArray[np.object_] | None = None
    #: Made already, for an answer collapsed by run written as text: each run code's
    #: `,"<id>"` as a row of bytes, when every run's is as wide (`id_parts.id_rows`).
    run_rows: npt.NDArray[np.uint8] | None = None
    #: Made already, for a listed answer written as text: each run code's
    #: `["<id>"],"components":` (`id_parts.listed_run_parts`).
    listed_runs: npt.NDArray[np.object_] | None = None
    #: Each data and program code's place among their keys sorted, when the caller has
    #: them already (`ranks`).
    key_ranks: tuple[Ints, Ints] | None = None
    #: Made already, for an answer collapsed by run written as text: each data code's
    #: `,{"data":"<key>","program":"` and each program code's `<key>","accesses":["read"],
    #: "runs":` and the same with "write" (`node_entries.head_parts`).
    heads: tuple[Parts, Parts, Parts] | None = None

    @classmethod
    def of(cls, relations: Iterable[KeyedRelation]) -> KeyedRelations:
        """Relations given one by one (a test's, or a few)."""
        rows = list(relations)
        codes: list[dict[str, int]] = [{}, {}, {}, {}]

        def coded(values: Iterable[str | None], vocabulary: dict[str, int]) -> Ints:
            found = (
                NONE if v is None else vocabulary.setdefault(v, len(vocabulary)) for v in values
            )
            return np.fromiter(found, dtype=np.int64, count=len(rows))

        data = coded((r.data for r in rows), codes[0])
        program = coded((r.program for r in rows), codes[1])
        run = coded((r.run for r in rows), codes[2])
        component = coded((r.component for r in rows), codes[3])
        write = np.fromiter((r.access == "write" for r in rows), dtype=np.int64, count=len(rows))
        data_keys, program_keys, run_ids, components = (list(c) for c in codes)
        return cls(
            data, program, write, run, component, data_keys, program_keys, run_ids, components
        )

    def ranks(self) -> tuple[Ints, Ints]:
        """Each data and program code's place among their keys sorted (`text_ranks`)."""
        return self.key_ranks or (text_ranks(self.data_keys), text_ranks(self.program_keys))

    def run_places(self, key: Callable[[str], Any]) -> Ints:
        """Each run code's place when the runs are sorted by `key` (of a run id): a
        `run_order` for `collapse`."""
        order = sorted(range(len(self.run_ids)), key=lambda code: key(self.run_ids[code]))
        places = np.empty(len(order), dtype=np.int64)
        places[order] = np.arange(len(order))
        return places


class Listed(NamedTuple):
    """One dimension's list in every group: the codes of each group's list, group after
    group, and where each group's begin (group g's are `codes[bounds[g]:bounds[g + 1]]`)."""

    codes: Ints
    bounds: Ints


@dataclass(frozen=True)
class Groups:
    """Relations grouped by `collapse`: the groups in the order the answer lists them
    (`order`, group numbers), a relation of each group (`first`, which names its dataset
    and program) and the access (0: read, 1: write), run and component lists of each group
    (`lists`, codes into `KeyedRelations`' vocabularies)."""

    order: Ints
    first: Ints
    lists: tuple[Listed, Listed, Listed]

    def __len__(self) -> int:
        return len(self.order)


def collapse(
    relations: KeyedRelations, dimensions: Collection[Dimension], run_order: Ints | None
) -> list[RelationEntry]:
    """The entries of `relations` collapsed in `dimensions` (`grouped`), as dictionaries."""
    groups = grouped(relations, dimensions, run_order)
    shown: list[list[list[str]]] = []
    for texts, listed in zip(list_texts(relations), groups.lists, strict=True):
        # One look-up per member, then a slice per group: the runs of thousands of
        # relations are named in one pass rather than a list comprehension per group.
        named = list(map(list(texts).__getitem__, listed.codes.tolist()))
        bounds = listed.bounds.tolist()
        shown.append([named[bounds[g] : bounds[g + 1]] for g in range(len(bounds) - 1)])
    data = relations.data[groups.first].tolist()
    program = relations.program[groups.first].tolist()
    data_keys, program_keys = relations.data_keys, relations.program_keys
    accesses, runs, components = shown
    return [
        {
            "data": data_keys[data[g]],
            "program": program_keys[program[g]],
            "accesses": accesses[g],
            "runs": runs[g],
            "components": components[g],
        }
        for g in groups.order.tolist()
    ]


def grouped(
    relations: KeyedRelations, dimensions: Collection[Dimension], run_order: Ints | None
) -> Groups:
    """Group `relations` by dataset, program and every dimension not collapsed, unioning the
    accesses, runs and components of each group. A group never spans two datasets or two
    programs. Lists are sorted (runs by `run_order`, each run code's place, or by id when
    it is None), and so are the groups, by (data, program, accesses, runs, components) as
    lists of text compare, so the same relations always render the same bytes. With no
    dimension collapsed, each distinct relation is its own group."""
    collapsed = [d in dimensions for d in ("access", "run", "component")]
    component_rank = text_ranks(relations.components)
    component = named_components(relations)
    # Per dimension: each relation's code (-1: none), and the rank of each code by its text
    # (the runs' only when asked: thousands of ids, which a run order mostly makes moot).
    dimension_codes: list[tuple[Ints, Callable[[], Ints]]] = [
        (relations.write, lambda: np.arange(2, dtype=np.int64)),
        (relations.run, cache(lambda: text_ranks(relations.run_ids))),
        (component, lambda: component_rank),
    ]
    data_ranks, program_ranks = relations.ranks()
    keys = [data_ranks[relations.data], program_ranks[relations.program]]
    for (codes, ranks), merged in zip(dimension_codes, collapsed, strict=True):
        keys.append(np.zeros_like(codes) if merged else ranked(codes, ranks()))
    groups, group_of = distinct_rows(np.stack(keys, axis=1))
    count = len(groups)
    first = np.empty(count, dtype=np.int64)
    first[group_of[::-1]] = np.arange(len(group_of))[::-1]
    lists: list[Listed] = []
    order_keys = [groups[:, 0], groups[:, 1]]
    for i, ((codes, ranks), merged) in enumerate(zip(dimension_codes, collapsed, strict=True)):
        if merged:
            listed_by = ranks() if i != 1 or run_order is None else run_order
            lists.append(_members(group_of, codes, listed_by, count))
            order_keys.append(_list_ranks(lists[-1], ranks, _tied(order_keys)))
        else:
            lists.append(_one_each(codes[first]))
            order_keys.append(groups[:, 2 + i])
    order: Ints = np.lexsort(order_keys[::-1])
    accesses, runs, components = lists
    return Groups(order, first, (accesses, runs, components))


def list_texts(relations: KeyedRelations) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
    """The text of each code of the access, run and component lists (`Groups.lists`)."""
    return _ACCESSES, relations.run_ids, relations.components


def named_components(relations: KeyedRelations) -> Ints:
    """Each relation's component code, or -1 for none: "" is none too."""
    # The last entry stands for -1.
    unnamed = np.array([not c for c in relations.components] + [True], dtype=np.bool_)
    named: Ints = np.where(unnamed[relations.component], NONE, relations.component)
    return named


def _one_each(codes: Ints) -> Listed:
    """Each group's list of a dimension it is grouped by: its code, or none for -1."""
    present = codes != NONE
    bounds = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(present, out=bounds[1:])
    return Listed(codes[present], bounds)


def _members(group_of: Ints, codes: Ints, order: Ints, count: int) -> Listed:
    """For each of `count` groups, the distinct `codes` (-1: none, left out) of its
    relations, listed by `order` (each code's place, a permutation)."""
    # `order` places each code once: a group's place and a code's packed in one integer
    # sort in one pass and name each distinct (group, code) once.
    present = codes != NONE
    places = len(order)
    packed = distinct(group_of[present] * places + order[codes[present]])
    code_at = np.empty(places, dtype=np.int64)
    code_at[order] = np.arange(places)
    group, code = packed // places, code_at[packed % places]
    return Listed(code, np.searchsorted(group, np.arange(count + 1)))


def _tied(keys: list[Ints]) -> Flags:
    """Which groups share their `keys` (columns) with another group: only their lists
    decide their order."""
    _, inverse = distinct_rows(np.stack(keys, axis=1))
    counts = np.bincount(inverse)
    tied: Flags = counts[inverse] > 1
    return tied


def _list_ranks(listed: Listed, ranks: Callable[[], Ints], among: Flags) -> Ints:
    """The place of each group's list among the lists of the groups `among`, compared as
    lists of their texts compare (element by element, a shorter prefix first); 0 for the
    others, whose order their earlier keys already decide."""
    found = np.zeros(len(among), dtype=np.int64)
    if not among.any():
        return found
    rank_list = ranks().tolist()
    members, bounds = listed.codes.tolist(), listed.bounds.tolist()
    chosen = np.flatnonzero(among).tolist()
    texts = [tuple(rank_list[c] for c in members[bounds[g] : bounds[g + 1]]) for g in chosen]
    places = {key: place for place, key in enumerate(sorted(set(texts)))}
    found[chosen] = [places[key] for key in texts]
    return found
