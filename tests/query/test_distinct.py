"""`graph_index.dataset_walk.distinct`: the distinct numbers of a walk, sorted, by one sort."""

from __future__ import annotations

import numpy as np
import pytest
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
