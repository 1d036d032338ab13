"""The order lineage answers list runs in (`query.run_order`): newest start first, runs
started at the same instant (or without a start) by their id's text."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from upstream.query.relation_table import id_ranks, text_ranks


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
