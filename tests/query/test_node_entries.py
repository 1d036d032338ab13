"""The `data` and `programs` of a lineage answer written as JSON text at once
(`query.node_entries`): the bytes orjson writes for the sorted entries."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from upstream.model.keys import EntityKind, entity_key
from upstream.query.node_entries import node_entries, node_text

NAMES = st.sampled_from(["a", "b.c", 'q"uote', "é\u2028", "back\\slash", ""])
NAMESPACES = st.sampled_from(["ns", "postgres://db:5432", "s3://b.x", "%2E"])


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(
            st.sampled_from(["dataset", "job", "workflow"]), NAMESPACES, NAMES, st.booleans()
        ),
        max_size=12,
        unique_by=lambda node: node[:3],
    )
)
def test_node_entries_are_the_text_of_the_sorted_entries(
    nodes: list[tuple[EntityKind, str, str, bool]],
) -> None:
    expected: dict[str, Any] = {}
    for kind, namespace, name, temporary in nodes:
        entry: dict[str, Any] = {"entityId": {"type": kind, "namespace": namespace, "name": name}}
        if temporary:
            entry["temporary"] = True
        expected[entity_key(kind, namespace, name)] = entry
    written = node_entries(
        (*node_text(kind, namespace, name), temporary) for kind, namespace, name, temporary in nodes
    )
    assert written.text == orjson.dumps(dict(sorted(expected.items())))
    assert len(written) == len(expected)


def test_no_node_is_an_empty_object() -> None:
    written = node_entries([])
    assert (written.text, len(written)) == (b"{}", 0)
