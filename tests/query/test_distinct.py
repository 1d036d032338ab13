"""`graph_index.dataset_walk.distinct`: the distinct numbers of a walk, sorted, by one sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from upstream.query.graph_index.dataset_walk import distinct, distinct_numbers


def test_distinct_numbers_sorted() -> None:
    assert distinct(np.array([7, -1, 3, 7, 0, 3], dtype=np.int64)).tolist() == [-1, 0, 3, 7]


def test_distinct_of_nothing_and_of_one() -> None:
    assert distinct(np.zeros(0, dtype=np.int64)).tolist() == []
    assert distinct(np.array([4], dtype=np.int64)).tolist() == [4]


@given(st.lists(st.integers(-(2**62), 2**62)))
def test_distinct_is_numpy_unique(values: list[int]) -> None:
    numbers = np.array(values, dtype=np.int64)
    assert np.array_equal(distinct(numbers), np.unique(numbers))


@given(
    st.lists(st.integers(-1, 99)),
    st.sampled_from([100, 1_000, 100_000]),
)
def test_distinct_numbers_and_their_places(values: list[int], size: int) -> None:
    """Found by flags over the index's size or, for few numbers, by a sort: the same."""
    numbers = np.array(values, dtype=np.int64)
    found, places = distinct_numbers(numbers, size)
    expected = np.unique(numbers[numbers != -1])
    assert np.array_equal(found, expected)
    assert found.dtype == places.dtype == np.int64
    assert [found[p] if p != -1 else -1 for p in places.tolist()] == values


def test_a_few_numbers_cost_nothing_in_proportion_to_the_index() -> None:
    """A one-level answer's few numbers are not flagged over the whole index: an index of
    a trillion runs (flags of a terabyte) answers at once."""
    numbers = np.array([7, -1, 10**11, 7], dtype=np.int64)
    found, places = distinct_numbers(numbers, 10**12)
    assert found.tolist() == [7, 10**11]
    assert places.tolist() == [0, -1, 1, 0]


@given(
    st.lists(st.sampled_from([-1, 0, 1, 2, 5, 9]), min_size=5, max_size=40),
    st.sampled_from([-1, 0, 3, 9, 12]),
)
def test_a_walks_node_count_is_its_distinct_datasets_and_jobs(
    numbers: list[int], seed: int
) -> None:
    """Counted by flags, not by sorting the relations' columns: as many as a set holds,
    the queried dataset counted once whether or not a relation names it."""
    from upstream.query.dataset_lineage import _node_count
    from upstream.query.graph_index.dataset_walk import FoundRelations

    rows = np.zeros((len(numbers) // 2, 5), dtype=np.int64)
    rows[:, 0], rows[:, 1] = numbers[0::2][: len(rows)], numbers[1::2][: len(rows)]
    found = FoundRelations(rows, np.ones(len(rows), dtype=np.int64))
    expected = len({*rows[:, 0].tolist(), seed}) + len(set(rows[:, 1].tolist()))
    assert _node_count(found, seed) == expected


def test_a_level_sorts_only_the_nodes_it_reaches_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deep level reaches mostly nodes reached before: they are left out before the
    others are sorted."""
    from upstream.query.graph_index import dataset_walk

    sorted_sizes: list[int] = []

    def counted(values: np.ndarray) -> np.ndarray:
        sorted_sizes.append(len(values))
        return distinct(values)

    monkeypatch.setattr(dataset_walk, "distinct", counted)
    depths = np.full(11, dataset_walk._UNREACHED, dtype=np.int64)
    depths[[2, 4]] = 0
    reached = np.array([4, 2, 7, -1, 2, 4, 7, 9, 4], dtype=np.int64)
    assert dataset_walk._new(depths, reached, 1).tolist() == [7, 9]
    assert depths[[2, 4, 7, 9]].tolist() == [0, 0, 1, 1]
    assert sorted_sizes == [3]
