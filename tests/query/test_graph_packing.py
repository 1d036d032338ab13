"""Packing an index's rows into columns (`graph_index.graph._packed`): chunk by chunk, and
without holding a table's columns twice while the chunks' columns are joined; after a load,
the allocator's free memory is handed back."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from upstream.query.graph_index import graph as graph_module
from upstream.query.graph_index.graph import _ROOM, Numberings, Table, _packed
from upstream.query.graph_index.numbering import Numbering
from upstream.store.engine import Store

COLUMNS = 8


def packed_as_columns(rows: Sequence[Sequence[Any]], ids: Numberings) -> Table:
    values = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    return Table({f"c{n}": values + n for n in range(COLUMNS)})


def test_chunks_are_packed_in_order_into_one_table() -> None:
    ids = Numberings(*(Numbering() for _ in range(6)))
    chunks = [[(i,) for i in range(start, start + 5)] for start in range(0, 20, 5)]
    table = _packed(packed_as_columns, iter(chunks), ids)
    assert table["c0"].tolist() == list(range(20))
    assert table["c3"].tolist() == [i + 3 for i in range(20)]
    assert len(_packed(packed_as_columns, iter([]), ids)) == 0


def test_a_table_is_not_held_twice_while_its_chunks_are_joined() -> None:
    ids = Numberings(*(Numbering() for _ in range(6)))
    rows = 20_000
    chunk = [(i,) for i in range(rows)]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        table = _packed(packed_as_columns, iter([chunk] * 10), ids)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The whole table with its room for the rows changes append, one column more, and the
    # rows' small change (tuples are shared); held twice over, it would be twice that.
    assert peak - start < table.nbytes * (1 + _ROOM + 2 / COLUMNS)


def test_a_load_hands_free_memory_back(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a load the C allocator's free memory goes back to the system, once."""
    calls: list[None] = []
    monkeypatch.setattr(graph_module, "return_free_memory", lambda: calls.append(None))
    with store.read() as conn:
        graph_module.load(conn, 0)
    assert calls == [None]
    graph_module.return_free_memory()  # runs here whatever the C library
