"""Compressed sparse row adjacency over the index's row tables: the rows whose key column
holds a node, for a whole frontier of nodes at once.

Written with numpy rather than taken from scipy.sparse or a graph library: a walk needs the
rows themselves (each carries a run, an access, a time interval tested per question), not
only the neighbours, and its steps carry weights 0 and 1 with a level limit, which none of
their breadth-first searches offers.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]


class Adjacency:
    """The rows of a table by the value of one key column (negative values: no key)."""

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

    def rows_of(self, nodes: npt.NDArray[np.integer]) -> tuple[Ints, Ints]:
        """The rows keyed by any of `nodes`, and for each the position in `nodes` of the node
        that keys it."""
        nodes = np.minimum(nodes, len(self.starts) - 2)
        first = self.starts[nodes]
        counts = self.starts[nodes + 1] - first
        total = int(counts.sum())
        if total == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        owner = np.repeat(np.arange(len(nodes), dtype=np.int64), counts)
        offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        return self.rows[np.repeat(first, counts) + offsets], owner
