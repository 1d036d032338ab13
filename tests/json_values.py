"""Hypothesis strategies for JSON values, shared by the tests of JSON text and answers."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: What JSON's scalars can hold, integers beyond 64 bits included (orjson cannot write them).
SCALARS: st.SearchStrategy[Any] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)


def json_values(leaves: st.SearchStrategy[Any] = SCALARS) -> st.SearchStrategy[Any]:
    """Nested lists and objects of `leaves`."""
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
