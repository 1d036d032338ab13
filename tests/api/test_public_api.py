"""The public Python surface is a contract (STYLE: httpx's habit): `__all__` is sorted and
names exactly what the package exposes, so the API never changes by accident."""

from __future__ import annotations

import inspect

import upstream


def test_all_is_sorted_and_matches_the_public_names() -> None:
    assert upstream.__all__ == sorted(upstream.__all__)
    public = {
        name
        for name in dir(upstream)
        if not name.startswith("_") and not inspect.ismodule(getattr(upstream, name))
    }
    assert set(upstream.__all__) - {"__version__"} == public


def test_the_recorder_contract_names() -> None:
    from upstream import Destination, FieldOperation, LineageRecorder, Source

    assert {Source, Destination, FieldOperation, LineageRecorder} <= {
        getattr(upstream, name) for name in upstream.__all__
    }
