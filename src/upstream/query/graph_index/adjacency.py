"""Compressed sparse row adjacency over the index's row tables: the rows whose key column
holds a node, for a whole frontier of nodes at once.

Written with numpy rather than taken from scipy.sparse or a graph library: a walk needs the
rows themselves (each carries a run, an access, a time interval tested per question), not
only the neighbours, and its steps carry weights 0 and 1 with a level limit, which none of
their breadth-first searches offers.

A version made by a change shares the arrays of the version it came from (design §6): the
rows it no longer holds are left out as they are read (`gone`), and the rows appended since
the shared part was built are kept apart, sorted by key (`extra_keys`, `extra_rows`), so a
change costs the rows appended since, not every row of the table.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
#: No rows (read-only): what a look-up that finds none answers, shared.
NO_ROWS: Ints = np.zeros(0, dtype=np.int64)
NO_ROWS.setflags(write=False)
_NONE_GONE: Flags = np.zeros(0, dtype=np.bool_)


def _spans(first: Ints, counts: Ints) -> tuple[Ints, Ints]:
    """The positions of the spans of `counts` places from `first`, one after another, and
    for each the number of its span. Most of a walk's look-ups find no row (two in three
    of a diff's): those make no array."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    if not total:
        return NO_ROWS, NO_ROWS
    owner = np.repeat(np.arange(len(first), dtype=np.int64), counts)
    # Each place is its span's first position plus how far it is into its span.
    return np.arange(total, dtype=np.int64) + (first - ends + counts)[owner], owner


class Adjacency:
    """The rows of a table by the value of one key column (negative values: no key)."""

    #: By row, whether this version does not hold it (a change replaced it); empty: none.
    #: A mask rather than the rows' list: a read tests each row it meets.
    gone: Flags = _NONE_GONE
    #: The key and row of each row appended after the arrays were built, by key, then row.
    extra_keys: Ints = NO_ROWS
    extra_rows: Ints = NO_ROWS

    def __init__(self, keys: npt.NDArray[np.int32], nodes: int) -> None:
        present = keys >= 0
        rows = np.flatnonzero(present)
        order = np.argsort(keys[present], kind="stable")
        self.rows: Ints = rows[order].astype(np.int64)
        counts = np.bincount(keys[present], minlength=nodes)
        # One empty node past the last, which nodes numbered after this was built stand for.
        self.starts: Ints = np.zeros(len(counts) + 2, dtype=np.int64)
        np.cumsum(counts, out=self.starts[1:-1])
        self.starts[-1] = self.starts[-2]

    def updated(
        self, kept: npt.NDArray[np.bool_], added: npt.NDArray[np.int32], nodes: int
    ) -> Adjacency:
        """The adjacency of this table's rows `kept`, followed by rows keyed `added`: what
        building it afresh gives, row for row, without sorting the rows kept again. A change
        replaces the rows of a few runs; sorting the whole table for them cost a large store
        a tenth of a second per adjacency."""
        old_keys = np.repeat(np.arange(len(self.starts) - 1), np.diff(self.starts))
        still = kept[self.rows]
        kept_keys = old_keys[still]
        kept_rows = (np.cumsum(kept) - 1)[self.rows[still]]
        present = added >= 0
        order = np.argsort(added[present], kind="stable")
        new_keys = added[present][order]
        new_rows = int(np.count_nonzero(kept)) + np.flatnonzero(present)[order]
        # A new row follows every kept row of its key, as the stable sort of a fresh build
        # puts it (its place in the table is after theirs).
        places = np.searchsorted(kept_keys, new_keys, side="right")
        counts = np.bincount(np.concatenate([kept_keys, new_keys]), minlength=nodes)
        made = Adjacency.__new__(Adjacency)
        made.rows = np.insert(kept_rows, places, new_rows).astype(np.int64)
        made.starts = np.zeros(len(counts) + 2, dtype=np.int64)
        np.cumsum(counts, out=made.starts[1:-1])
        made.starts[-1] = made.starts[-2]
        return made

    def changed(self, gone: Flags, first: int, added: npt.NDArray[np.int32]) -> Adjacency:
        """This adjacency's arrays, shared, without the rows `gone` (by row: whether the new
        version does not hold it; empty: none) and with the rows numbered from `first` on
        keyed `added`. Costs the rows appended since the arrays were built, not the
        table's."""
        keys, rows = self.extra_keys, self.extra_rows
        if len(gone):
            still = ~gone[rows]
            keys, rows = keys[still], rows[still]
        present = np.flatnonzero(added >= 0)
        order = np.argsort(added[present], kind="stable")
        new_keys = added[present][order].astype(np.int64)
        # A new row follows every row of its key, as a fresh build puts it (it is numbered
        # after them all); np.insert keeps rows given the same place in the order given.
        places = np.searchsorted(keys, new_keys, side="right")
        made = Adjacency.__new__(Adjacency)
        made.rows, made.starts, made.gone = self.rows, self.starts, gone
        made.extra_keys = np.insert(keys, places, new_keys)
        made.extra_rows = np.insert(rows, places, first + present[order])
        return made

    @property
    def empty(self) -> bool:
        """Whether no row is keyed at all (the job-end edges of most stores): a walk asks
        such an adjacency nothing."""
        return not len(self.rows) and not len(self.extra_rows)

    @property
    def nbytes(self) -> int:
        held = (self.rows, self.starts, self.gone, self.extra_keys, self.extra_rows)
        return sum(array.nbytes for array in held)

    def rows_of(self, nodes: npt.NDArray[np.integer]) -> tuple[Ints, Ints]:
        """The rows keyed by any of `nodes`, and for each the position in `nodes` of the node
        that keys it: for each node its rows in the order of the table, as a fresh build of
        this version's rows gives them."""
        clamped = np.minimum(nodes, len(self.starts) - 2)
        first = self.starts[clamped]
        at, owner = _spans(first, self.starts[clamped + 1] - first)
        rows = self.rows[at]
        if len(self.gone):
            gone = self.gone[rows]
            if gone.any():  # most reads meet none of the rows a change replaced
                rows, owner = rows[~gone], owner[~gone]
        if not len(self.extra_keys):
            return rows, owner
        start = np.searchsorted(self.extra_keys, nodes, side="left")
        at, extra_owner = _spans(
            start, np.searchsorted(self.extra_keys, nodes, side="right") - start
        )
        if not len(at):
            return rows, owner
        # Both parts are in the order of `nodes`, and every appended row follows the rows
        # the arrays hold: each appended row goes after the held rows of its node and those
        # before it.
        places = np.searchsorted(owner, extra_owner, side="right")
        places += np.arange(len(places))
        held = np.ones(len(rows) + len(places), dtype=np.bool_)
        held[places] = False
        merged, owners = np.empty(len(held), dtype=np.int64), np.empty(len(held), dtype=np.int64)
        merged[held], owners[held] = rows, owner
        merged[places], owners[places] = self.extra_rows[at], extra_owner
        return merged, owners
