"""Which nodes of one graph version a reader may see, and what a walk stopped at (design §5).

A walk consults `VisibleNodes` per node: it does not pass through a hidden dataset or job,
and every relation it would have shown or followed with a hidden end is counted, never
named (`hiddenNodes`: the distinct hidden datasets and jobs at those relations' ends;
`hiddenRelations`: the distinct (dataset, job, run, access) of those relations). So the
visible part of a walk is the walk of the graph without the hidden nodes.

Visibility is by namespace. An entity's namespace never changes (its id is made from it),
so each process keeps one namespace column per numbering, read once and extended by the
entities numbered since: a reader's masks cost one comparison per namespace and one
gather, not a statement per answer.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import Visibility
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.numbering import Numbering
from upstream.store import schema as t
from upstream.store.visibility import entity_namespaces

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]


class _NamespaceColumn:
    """The namespace (as a code into `names`) of every number of one numbering."""

    def __init__(self, table: sa.Table) -> None:
        self.table = table
        self.codes = np.zeros(0, dtype=np.int32)
        self.names: list[str] = []
        self._code_of: dict[str, int] = {}
        self._lock = threading.Lock()

    def upto(self, conn: Connection, numbering: Numbering, size: int) -> npt.NDArray[np.int32]:
        """The codes of numbers 0 to `size` - 1, read for those not read before."""
        with self._lock:
            have = len(self.codes)
            if have < size:
                texts = numbering.texts[have:size]
                found = entity_namespaces(conn, self.table, None if have == 0 else texts)
                # An id without a row (none is expected) has no namespace: shown to no one.
                extra = np.fromiter(
                    (self._code(found.get(text, "")) for text in texts),
                    dtype=np.int32,
                    count=len(texts),
                )
                self.codes = np.concatenate([self.codes, extra])
            return self.codes[:size]

    def _code(self, name: str) -> int:
        code = self._code_of.get(name)
        if code is None:
            code = self._code_of[name] = len(self.names)
            self.names.append(name)
        return code


_COLUMNS: weakref.WeakKeyDictionary[Numbering, _NamespaceColumn] = weakref.WeakKeyDictionary()
_COLUMNS_LOCK = threading.Lock()


def _column(numbering: Numbering, table: sa.Table) -> _NamespaceColumn:
    with _COLUMNS_LOCK:
        column = _COLUMNS.get(numbering)
        if column is None:
            column = _COLUMNS[numbering] = _NamespaceColumn(table)
        return column


def _mask(
    conn: Connection, numbering: Numbering, table: sa.Table, size: int, visibility: Visibility
) -> Flags:
    """Whether each of `size` places (numbers, then the place of numbers made later) is
    visible; a number made after the version is never met by its walks."""
    column = _column(numbering, table)
    codes = column.upto(conn, numbering, size - 1)
    shown = np.array([visibility.shows(name) for name in column.names], dtype=np.bool_)
    mask: Flags = np.ones(size, dtype=np.bool_)
    mask[: len(codes)] = shown[codes] if len(codes) else mask[:0]
    return mask


class VisibleNodes:
    """One reader's view of one graph version: which datasets and jobs it may see, and the
    hidden relations the walks met."""

    def __init__(self, datasets: Flags, jobs: Flags) -> None:
        self.datasets = datasets
        self.jobs = jobs
        self._met: list[Ints] = []

    @classmethod
    def of(cls, conn: Connection, graph: Graph, visibility: Visibility) -> VisibleNodes | None:
        """The masks of `visibility` over `graph`; None when it shows everything (a walk
        then consults nothing)."""
        if visibility.everything:
            return None
        ids = graph.ids
        datasets = _mask(conn, ids.datasets, t.datasets, len(graph.deleted_datasets), visibility)
        jobs = _mask(conn, ids.jobs, t.jobs, len(graph.deleted_jobs), visibility)
        return cls(datasets, jobs)

    def shows_datasets(self, numbers: Ints) -> Flags:
        return _at(self.datasets, numbers)

    def shows_jobs(self, numbers: Ints) -> Flags:
        return _at(self.jobs, numbers)

    def stop_at(self, dataset: Ints, job: Ints, run: Ints, write: Ints, met: Flags) -> Flags:
        """Which of these relations have both ends visible; those of `met` with one end
        visible and the other hidden are counted as hidden relations the walk stopped at (a
        relation between two hidden nodes is beyond where it stopped)."""
        datasets, jobs = self.shows_datasets(dataset), self.shows_jobs(job)
        shown = datasets & jobs
        hidden = met & (datasets ^ jobs)
        if hidden.any():
            columns = (dataset, job, run, np.broadcast_to(write, dataset.shape))
            self._met.append(np.stack([c[hidden].astype(np.int64) for c in columns], axis=1))
        return shown

    @property
    def hidden_relations(self) -> int:
        if not self._met:
            return 0
        return len(np.unique(np.concatenate(self._met), axis=0))

    @property
    def hidden_nodes(self) -> int:
        if not self._met:
            return 0
        met = np.concatenate(self._met)
        datasets = np.unique(met[:, 0][~self.shows_datasets(met[:, 0])])
        jobs = np.unique(met[:, 1][~self.shows_jobs(met[:, 1])])
        return len(datasets) + len(jobs)


def _at(mask: Flags, numbers: Ints) -> Flags:
    """`mask` of `numbers`; NONE (no node) counts as shown."""
    found: Flags = (numbers < 0) | mask[np.minimum(np.maximum(numbers, 0), len(mask) - 1)]
    return found
