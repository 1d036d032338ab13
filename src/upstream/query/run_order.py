"""The order lineage answers list runs in: newest start first (design §4.2)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
from sqlalchemy.engine import Connection

from upstream.query.graph_index.graph import NO_START, Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import NONE, places_among
from upstream.query.relation_table import Ints, Vocabulary, id_ranks


def newest_first_places(graph: Graph, runs: Vocabulary) -> Ints:
    """Each run's place in the order runs are listed in (design §4.2): newest start first,
    runs without a start time last, ties by id, so the order is the same on every call and
    on both databases. Only an answer collapsed by run lists several runs in one relation;
    the others ask for no run's start. The starts are the index's (integer microseconds, as
    the store gives them); a run the index does not hold has none."""
    order = graph.newest_first
    if np.all((runs.numbers != NONE) & (runs.numbers < len(order))):
        # Runs of this version (a walk's): their order is the version's, worked out once.
        return places_among(order[runs.numbers], len(order))
    starts, _ = graph.spans(runs.numbers)
    unknown = (runs.numbers == NONE) | (starts == NO_START)
    newest = np.where(unknown, 0, -starts)
    # Ties by id: every run is ranked by its text, by numpy.
    return _places(np.lexsort((id_ranks(runs.texts), newest, unknown)))


def _places(order: Ints) -> Ints:
    """Each item's place in `order` (positions, a permutation)."""
    places = np.empty(len(order), dtype=np.int64)
    places[order] = np.arange(len(order))
    return places


def newest_first(conn: Connection, run_ids: Collection[str]) -> Callable[[str], int]:
    """A sort key for run ids: their place as `newest_first_places` orders them."""
    graph = graph_of(conn)
    runs, _ = Vocabulary.of_texts(graph.ids.runs, list(run_ids))
    places = dict(zip(runs.texts, newest_first_places(graph, runs).tolist(), strict=True))
    return places.__getitem__
