"""The order lineage answers list runs in (`query.run_order`): newest start first, runs
started at the same instant (or without a start) by their id's text."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import BASE_TIME, ds, run_event
from tests.conftest import post
from tests.query.test_collapsed_entries import RUN_A, RUN_B, RUN_C
from tests.query.test_dataset_lineage import NS
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.query.relation_table import Vocabulary, id_ranks, text_ranks
from upstream.query.run_order import newest_first, newest_first_places
from upstream.store.engine import Store

#: A run id the index does not hold; its text sorts before every other.
UNHELD = "00000000-0000-4000-8000-000000000000"


def test_id_ranks_order_ids_as_their_text() -> None:
    """A shorter prefix first, digits before letters, letters by code point."""
    ids = ["b1", "a", "ab", "a-b", "0f", "é"]
    assert id_ranks(ids).tolist() == [4, 1, 3, 2, 0, 5]


def test_id_ranks_of_no_id() -> None:
    assert id_ranks([]).tolist() == []


@given(st.sets(st.text(st.characters(blacklist_characters="\x00"), max_size=6)))
def test_id_ranks_are_the_text_ranks(texts: set[str]) -> None:
    """For any texts without a NUL character (numpy pads its strings with them)."""
    listed = sorted(texts, key=hash)
    assert np.array_equal(id_ranks(listed), text_ranks(listed))


def test_runs_newest_first_in_the_index_and_beyond_it(client: TestClient, store: Store) -> None:
    """Runs of the index by the version's order (`Graph.newest_first`): the latest start
    first, runs started at the same instant by id; a run the index does not hold has no
    start, so it comes after those that have one, whatever its id."""
    later = BASE_TIME + timedelta(hours=1)
    post(
        client,
        *(
            run_event((NS, "P"), run_id=run, event_type="START", time=time, inputs=[ds(NS, "S")])
            for run, time in ((RUN_B, BASE_TIME), (RUN_C, later), (RUN_A, BASE_TIME))
        ),
    )
    with store.read() as conn:
        graph = graph_of(conn)
        numbers = [graph.ids.runs.known(run) for run in (RUN_C, RUN_A, RUN_B)]
        assert np.all(np.diff(graph.newest_first[numbers]) > 0)
        runs, _ = Vocabulary.of_texts(graph.ids.runs, [RUN_A, RUN_B, RUN_C])
        assert newest_first_places(graph, runs).tolist() == [1, 2, 0]
        key = newest_first(conn, [RUN_A, UNHELD, RUN_C, RUN_B])
    assert sorted([RUN_A, UNHELD, RUN_C, RUN_B], key=key) == [RUN_C, RUN_A, RUN_B, UNHELD]


def test_a_vocabulary_of_index_numbers() -> None:
    """Codes follow the numbers' order; NONE stays NONE."""
    numbering = Numbering()
    for text in "hgfedcba":
        numbering.number(text)
    vocabulary, codes = Vocabulary.of_numbers(numbering, np.array([5, NONE, 2, 5, 7, NONE]))
    numbering.number("later")  # the texts, made when first read, are those of the numbers
    assert (list(vocabulary.texts), vocabulary.numbers.tolist()) == (["f", "c", "a"], [2, 5, 7])
    assert (vocabulary.texts[1], len(vocabulary.texts), "a" in vocabulary.texts) == ("c", 3, True)
    assert codes.tolist() == [1, NONE, 0, 1, 2, NONE]
    empty, none = Vocabulary.of_numbers(numbering, np.array([NONE], dtype=np.int64))
    assert (list(empty.texts), none.tolist()) == ([], [NONE])
