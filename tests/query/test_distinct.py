"""`graph_index.dataset_walk.distinct`: the distinct numbers of a walk, sorted, by one sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from upstream.query.graph_index.dataset_walk import distinct


def test_distinct_numbers_sorted() -> None:
    assert distinct(np.array([7, -1, 3, 7, 0, 3], dtype=np.int64)).tolist() == [-1, 0, 3, 7]


def test_distinct_of_nothing_and_of_one() -> None:
    assert distinct(np.zeros(0, dtype=np.int64)).tolist() == []
    assert distinct(np.array([4], dtype=np.int64)).tolist() == [4]


@given(st.lists(st.integers(-(2**62), 2**62)))
def test_distinct_is_numpy_unique(values: list[int]) -> None:
    numbers = np.array(values, dtype=np.int64)
    assert np.array_equal(distinct(numbers), np.unique(numbers))
