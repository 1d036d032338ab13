"""Marquez node ids (design §4.4): readings against known namespaces, and malformed ids."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from upstream.model.errors import InvalidParameter
from upstream.model.nodeid import (
    NodeId,
    dataset_node_id,
    field_node_id,
    job_node_id,
    parse_node_id,
    possible_namespaces,
)

PG = "postgres://db.example.com:5432"


def test_namespace_with_colons_and_slashes() -> None:
    value = f"dataset:{PG}:public.orders"
    # Every known namespace that fits gives a reading; the resolver keeps the first that is
    # a stored dataset.
    assert parse_node_id(value, [PG, "postgres", "other"]) == [
        NodeId("dataset", PG, "public.orders"),
        NodeId("dataset", "postgres", "//db.example.com:5432:public.orders"),
    ]
    assert possible_namespaces(value) == [
        "postgres://db.example.com:5432",
        "postgres://db.example.com",
        "postgres",
    ]


def test_longer_namespaces_and_longer_dataset_names_come_first() -> None:
    assert parse_node_id("dataset:a:b:c", ["a", "a:b"]) == [
        NodeId("dataset", "a:b", "c"),
        NodeId("dataset", "a", "b:c"),
    ]
    assert parse_node_id("datasetField:ns:db:t:col", ["ns"]) == [
        NodeId("datasetField", "ns", "db:t", "col"),
        NodeId("datasetField", "ns", "db", "t:col"),
    ]


def test_version_suffix() -> None:
    version = uuid.uuid4()
    # Read as a version first, then as part of the name (names may hold anything).
    assert parse_node_id(f"job:etl:daily#{version}", ["etl"]) == [
        NodeId("job", "etl", "daily", None, version),
        NodeId("job", "etl", f"daily#{version}"),
    ]
    # A `#` that is not followed by a UUID is part of the name.
    assert parse_node_id("job:etl:daily#2", ["etl"]) == [NodeId("job", "etl", "daily#2")]


def test_unknown_namespace_gives_no_reading() -> None:
    assert parse_node_id("dataset:nowhere:t", ["db"]) == []


@pytest.mark.parametrize(
    "value",
    ["", "table:a:b", "dataset", "dataset:", "dataset:ns", "datasetField:ns:t", "job::x", "run:1"],
)
def test_malformed(value: str) -> None:
    with pytest.raises(InvalidParameter, match="nodeId"):
        parse_node_id(value, ["ns"])


def test_render() -> None:
    assert dataset_node_id(PG, "public.orders") == f"dataset:{PG}:public.orders"
    assert job_node_id("etl", "daily") == "job:etl:daily"
    assert field_node_id("s3://b", "raw/x", "id") == "datasetField:s3://b:raw/x:id"
    assert (
        NodeId("datasetField", "s3://b", "raw/x", "id").render() == "datasetField:s3://b:raw/x:id"
    )


names = st.text(min_size=1, max_size=12)


@given(namespace=names, name=names, field=names, others=st.lists(names, max_size=3))
@example(namespace=":", name="0", field=":", others=[])  # a namespace that begins with `:`
def test_every_rendered_id_parses_back(
    namespace: str, name: str, field: str, others: list[str]
) -> None:
    known = [namespace, *others]
    for node in (
        NodeId("dataset", namespace, name),
        NodeId("job", namespace, name),
        NodeId("datasetField", namespace, name, field),
    ):
        assert node in parse_node_id(node.render(), known)
