"""A listed answer's relations written as JSON text at once (`query.listed_entries`): the
same bytes as the entries `collapse` gives, written by orjson, with no entry made."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import post
from tests.query.test_dataset_lineage import get, rid, run
from upstream.query import lineage_render
from upstream.query.collapse import KeyedRelation, KeyedRelations, collapse
from upstream.query.listed_entries import listed_entries

NAMES = ["dataset.n.b", "dataset.n.a", 'dataset.m."é"', "dataset.n.\\x", "dataset.n.a,b"]
RUNS = [None, "r3", "r1", "r2", "r10"]
COMPONENTS = ["", "mapper", "Reducer", "z", "\u2028"]


def keyed_relations(
    runs: list[str | None], components: list[str] = COMPONENTS
) -> st.SearchStrategy[list[KeyedRelation]]:
    """Up to 25 relations among names, runs and components that JSON escapes or orders
    unlike their text."""
    relation = st.builds(
        KeyedRelation,
        st.sampled_from(NAMES),
        st.sampled_from(["job.n.j", "workflow.n.w", 'job.n.","']),
        st.sampled_from(["read", "write"]),
        st.sampled_from(runs),
        st.sampled_from(components),
    )
    return st.lists(relation, max_size=25)


@settings(max_examples=300, deadline=None)
@given(relations=keyed_relations(RUNS))
def test_listed_entries_are_the_text_of_the_listed_answer(
    relations: list[KeyedRelation],
) -> None:
    keyed = KeyedRelations.of(relations)
    written = listed_entries(keyed)
    entries = collapse(keyed, (), None)
    assert written.text == orjson.dumps(entries)
    assert len(written) == len(entries)


def test_a_listed_answer_over_http_makes_no_entry(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route's listed answer is written from the relations' columns, and so is its
    collapsed answer (`collapsed_entries`): neither makes an entry."""
    post(
        client,
        run("P1", rid(), reads=["S"], writes=["A", "B"]),
        run("P2", rid(), reads=["A"], writes=["C"]),
    )
    listed = get(client, "S", direction="downstream").json()
    made: list[Any] = []

    def counted(*args: Any) -> Any:
        made.append(args)
        return collapse(*args)

    monkeypatch.setattr(lineage_render, "collapse", counted)
    assert get(client, "S", direction="downstream").json() == listed
    assert made == []
    assert len(listed["relations"]) == 5
    collapsed = get(client, "S", direction="downstream", collapse="run").json()
    assert made == []
    assert [r["runs"] for r in collapsed["relations"]] == [r["runs"] for r in listed["relations"]]
