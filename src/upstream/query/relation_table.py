"""The relations an answer shows as integer columns (design §6): each column a code into the
distinct ids it names, so an answer is cut, collapsed and sorted on integers and makes one
Python string per distinct dataset, job and run rather than an object per relation.

Codes are dense (0 up to the number of distinct ids) and each vocabulary also gives the
index's number of each id, for what the index knows about it (a run's start, a dataset's
temporary marks): a walk's relations come as the index numbers them (`of_rows`), a
notification's as id texts that the index may no longer hold (`of_shown`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np
import numpy.typing as npt

from upstream.query.graph_index.dataset_walk import ShownRelation, distinct_numbers
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.numbering import NONE, IdTexts, Numbering

Ints = npt.NDArray[np.int64]


class NamedTexts(Sequence[str]):
    """The texts of some numbers of a numbering, made into a list when first read: an
    answer collapsed by run writes its thousands of runs' ids by number (`query.id_parts`)
    and never reads them."""

    def __init__(self, texts: IdTexts, numbers: Ints) -> None:
        self._texts, self._numbers = texts, numbers

    @cached_property
    def _named(self) -> list[str]:
        return self._texts.take(self._numbers)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._named[index]

    def __len__(self) -> int:
        return len(self._numbers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._named)

    def __contains__(self, text: object) -> bool:
        return text in self._named

    def ranks(self) -> Ints | None:
        """Each text's place among them sorted, from the numbering's kept order of its ids
        (`Numbering.text_ranks`): none made. None when the numbering holds a text that is no
        uuid's."""
        return self._texts.ranks(self._numbers)


@dataclass(frozen=True)
class Vocabulary:
    """The distinct ids (or components) of one column: each code's text, and its number in
    the index (NONE for one the index does not hold)."""

    texts: Sequence[str]
    numbers: Ints

    @classmethod
    def of_numbers(cls, numbering: Numbering, numbers: Ints) -> tuple[Vocabulary, Ints]:
        """The vocabulary of index `numbers` and each one's code (NONE stays NONE), codes in
        the order of the numbers."""
        texts = numbering.texts
        distinct, coded = distinct_numbers(numbers, len(texts))
        return cls(NamedTexts(texts, distinct), distinct), coded

    @classmethod
    def of_texts(cls, numbering: Numbering, texts: Sequence[str | None]) -> tuple[Vocabulary, Ints]:
        """The vocabulary of id `texts` and each one's code (None: NONE)."""
        codes: dict[str, int] = {}
        coded = np.fromiter(
            (NONE if text is None else codes.setdefault(text, len(codes)) for text in texts),
            dtype=np.int64,
            count=len(texts),
        )
        known = (numbering.known(text) for text in codes)
        numbers = np.fromiter((NONE if n is None else n for n in known), dtype=np.int64)
        return cls(list(codes), numbers), coded


@dataclass(frozen=True)
class RelationTable:
    """Relations (dataset, job, run, write, component) as codes into their vocabularies; a
    declared relation's run is NONE, and `write` is 1 for a write, 0 for a read. The
    vocabularies' numbers are those of `graph`, the index version the relations were read
    from (an answer asks it about them rather than find the version again)."""

    dataset: Ints
    job: Ints
    run: Ints
    write: Ints
    component: Ints
    datasets: Vocabulary
    jobs: Vocabulary
    runs: Vocabulary
    components: Vocabulary
    graph: Graph

    def __len__(self) -> int:
        return len(self.dataset)

    @classmethod
    def of_rows(cls, graph: Graph, rows: Ints) -> RelationTable:
        """Rows of (dataset, job, run, write, component) index numbers, as a walk finds them."""
        ids = graph.ids
        rows = rows.reshape(-1, 5)
        datasets, dataset = Vocabulary.of_numbers(ids.datasets, rows[:, 0])
        jobs, job = Vocabulary.of_numbers(ids.jobs, rows[:, 1])
        runs, run = Vocabulary.of_numbers(ids.runs, rows[:, 2])
        components, component = Vocabulary.of_numbers(ids.components, rows[:, 4])
        write = rows[:, 3].astype(np.int64)
        return cls(dataset, job, run, write, component, datasets, jobs, runs, components, graph)

    @classmethod
    def of_shown(cls, graph: Graph, relations: Sequence[ShownRelation]) -> RelationTable:
        """Relations named by their ids' texts (some perhaps unknown to the index)."""
        ids = graph.ids
        datasets, dataset = Vocabulary.of_texts(ids.datasets, [r.dataset_id for r in relations])
        jobs, job = Vocabulary.of_texts(ids.jobs, [r.job_id for r in relations])
        runs, run = Vocabulary.of_texts(ids.runs, [r.run_id for r in relations])
        components, component = Vocabulary.of_texts(
            ids.components, [r.component for r in relations]
        )
        write = np.fromiter(
            (r.access == "write" for r in relations), dtype=np.int64, count=len(relations)
        )
        return cls(dataset, job, run, write, component, datasets, jobs, runs, components, graph)


def text_ranks(texts: Sequence[str]) -> Ints:
    """The place of each of `texts` (distinct) in their sorted order: codes ordered by
    their ranks are ordered as their texts. The ids a walk names (`NamedTexts`) are ranked
    by their numbering's kept order, without a text made: a listed answer's 18,000 run ids
    took a tenth of its time to make and sort."""
    if isinstance(texts, NamedTexts):
        kept = texts.ranks()
        if kept is not None:
            return kept
    listed = list(texts)  # a list's own look-up, not a sequence's method per comparison
    ranks = np.empty(len(listed), dtype=np.int64)
    ranks[sorted(range(len(listed)), key=listed.__getitem__)] = np.arange(len(listed))
    return ranks


def id_ranks(texts: Sequence[str]) -> Ints:
    """`text_ranks` of ids' texts (distinct), sorted by numpy: thousands of run ids that
    started at the same instant are ordered by their text in a fifth of the time. Numpy's
    strings are padded with NUL characters, so it orders as Python does any texts without
    one: a uuid's text has none."""
    ranks = np.empty(len(texts), dtype=np.int64)
    ranks[np.argsort(np.array(texts, dtype=np.str_))] = np.arange(len(texts))
    return ranks


def ranked(codes: Ints, ranks: Ints) -> Ints:
    """Each code's rank (or any value `ranks` gives each code: the index's numbers); NONE
    (no run, no component) stays NONE, and sorts first, as an empty list does."""
    if not len(ranks):
        return np.full(len(codes), NONE, dtype=np.int64)
    found: Ints = np.where(codes == NONE, NONE, ranks[np.maximum(codes, 0)])
    return found
