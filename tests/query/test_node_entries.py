"""The `data` and `programs` of a lineage answer written as JSON text at once
(`query.node_entries`): the bytes orjson writes for the sorted entries."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from upstream.model.keys import EntityKind, entity_key
from upstream.query.graph_index.names import Name
from upstream.query.graph_index.numbering import Numbering
from upstream.query.node_entries import node_entries, node_parts, node_text, temporary_text

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
    texts = [node_text(kind, namespace, name) for kind, namespace, name, _ in nodes]
    members = [
        temporary_text(member) if node[3] else member
        for (_, member), node in zip(texts, nodes, strict=True)
    ]
    written = node_entries([key for key, _ in texts], members)
    assert written.text == orjson.dumps(dict(sorted(expected.items())))
    assert len(written) == len(expected)


def test_no_node_is_an_empty_object() -> None:
    written = node_entries([], [])
    assert (written.text, len(written)) == (b"{}", 0)


def test_node_parts_are_named_once_by_number_and_kind() -> None:
    """Each entity's key and member is made the first time an answer names it (its name
    asked once) and kept by number; the same job as a workflow is a text of its own."""
    numbering = Numbering()
    numbering.numbers(["d1", "d2", "d3"])
    asked: list[list[str]] = []

    def names(ids: Collection[str]) -> dict[str, Name]:
        asked.append(sorted(ids))
        return {i: ("ns", f"n.{i}") for i in ids}

    keys, members = node_parts(numbering, "job", np.array([2, 0, 2]), names)
    assert keys.tolist() == ["job.ns.n.d3", "job.ns.n.d1", "job.ns.n.d3"]
    assert members.tolist() == [node_text("job", "ns", f"n.{i}")[1] for i in ("d3", "d1", "d3")]
    keys, _ = node_parts(numbering, "job", np.array([0, 1]), names)
    assert keys.tolist() == ["job.ns.n.d1", "job.ns.n.d2"]
    assert asked == [["d1", "d3"], ["d1", "d3"], ["d2"], ["d2"]]  # key and member, once each
    keys, _ = node_parts(numbering, "workflow", np.array([0]), names)
    assert keys.tolist() == ["workflow.ns.n.d1"]
