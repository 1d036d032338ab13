"""The order lineage answers list runs in: newest start first (design §4.2)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from upstream.query.graph_index.graph import NO_START
from upstream.query.graph_index.index import graph_of


def newest_first(conn: Connection, run_ids: Collection[str]) -> Callable[[str], Any]:
    """A sort key for run ids (design §4.2): newest start first, runs without a start time
    last, ties by id, so the order is the same on every call and on both databases. Only
    an answer collapsed by run lists several runs in one relation; the others ask for no
    run's start. The starts are the index's (integer microseconds, as the store gives them)."""
    graph = graph_of(conn)
    known = {run_id: graph.ids.runs.known(run_id) for run_id in run_ids}
    numbered = {run_id: n for run_id, n in known.items() if n is not None}
    numbers = np.fromiter(numbered.values(), dtype=np.int64, count=len(numbered))
    starts, _ = graph.spans(numbers)
    started = {
        run_id: moment
        for run_id, moment in zip(numbered, starts.tolist(), strict=True)
        if moment != NO_START
    }

    def key(run_id: str) -> tuple[bool, int, str]:
        moment = started.get(run_id)
        return (moment is None, -(moment or 0), run_id)

    return key
