"""Field operations as pure rules (design §3.5): resolution, validation, alive fields, trimming
a field's path, source fields, checksum. No database: expectations are worked out by hand."""

from __future__ import annotations

import pytest

from tests.field_scenarios import seed_operations, wide_operations
from upstream import FieldOperation, Source
from upstream.model.errors import InvalidInput
from upstream.model.field_operations import (
    FieldRef,
    SourceRef,
    Step,
    operation_set_from_stored,
    operations_from_json,
    resolve,
)

USERS = SourceRef("myns", "user_data")


def names(steps: list[Step]) -> list[str]:
    return [s.name for s in steps]


def test_seed_example_resolves_with_two_drops_and_the_alive_fields() -> None:
    ops = resolve(seed_operations())
    assert [s.name for s in ops.steps] == ["read", "parse", "concat", "drop", "drop", "create"]
    # Each `drop` drops the parse output it names; `name` is the latest output called so.
    assert ops.steps[3].inputs == (FieldRef("firstName", 1),)
    assert ops.steps[4].inputs == (FieldRef("lastName", 1),)
    assert ops.alive == {
        "offset": 0,
        "body": 0,
        "age": 1,
        "city": 1,
        "state": 1,
        "name": 2,
        "uniqueId": 5,
    }
    assert ops.dropped_by("firstName") is ops.steps[3]
    assert ops.dropped_by("lastName") is ops.steps[4]
    assert ops.dropped_by("age") is None


def test_seed_paths_are_trimmed_to_what_the_field_depends_on() -> None:
    ops = resolve(seed_operations())
    assert names(ops.trim_to_field("uniqueId")) == ["read", "parse", "concat", "create"]
    assert names(ops.trim_to_field("age")) == ["read", "parse"]
    assert names(ops.trim_to_field("offset")) == ["read"]
    assert ops.trim_to_field("firstName") == []  # dropped: not a destination field


def test_source_fields_of_destination_fields() -> None:
    lineage, unreached = resolve(seed_operations()).field_lineage()
    assert {
        f: [(o.source.name, o.field, o.subtype) for o in origins] for f, origins in lineage.items()
    } == {
        "offset": [("user_data", "offset", "IDENTITY")],
        "body": [("user_data", "body", "IDENTITY")],
        "age": [("user_data", "body", "TRANSFORMATION")],
        "city": [("user_data", "body", "TRANSFORMATION")],
        "state": [("user_data", "body", "TRANSFORMATION")],
        "name": [("user_data", "body", "TRANSFORMATION")],
        "uniqueId": [("user_data", "body", "TRANSFORMATION")],
    }
    assert unreached == []


def test_builder_mirrors_the_seed_and_equals_the_pythonic_form() -> None:
    src = Source("myns", "user_data")
    built = (
        FieldOperation.builder()
        .set_name("read")
        .set_description("Reading the data from the file")
        .add_input_source(src)
        .add_output("offset")
        .add_output("body")
        .build()
    )
    parse = (
        FieldOperation.builder().set_name("parse").add_input_field("body").add_output("x").build()
    )
    a = resolve([built, parse])
    b = resolve(
        [
            FieldOperation(
                "read", "Reading the data from the file", inputs=[src], outputs=["offset", "body"]
            ),
            FieldOperation("parse", inputs=["body"], outputs=["x"]),
        ]
    )
    assert a.to_json() == b.to_json()
    assert a.checksum == b.checksum


def test_output_of_a_specific_operation_disambiguates_a_name() -> None:
    users, codes = Source("ns", "users"), Source("ns", "codes")
    read_users = FieldOperation("read", inputs=[users], outputs=["id", "name"])
    read_codes = FieldOperation("read", inputs=[codes], outputs=["id"])
    join = FieldOperation(
        "join", inputs=[read_users.output("id"), read_codes.output("id")], outputs=["key"]
    )
    latest = FieldOperation("copy", inputs=["id"], outputs=["id2"])
    ops = resolve([read_users, read_codes, join, latest])
    assert ops.steps[2].inputs == (FieldRef("id", 0), FieldRef("id", 1))
    assert ops.steps[3].inputs == (FieldRef("id", 1),)  # the latest earlier `id`
    assert {(o.source.name, o.field) for o in ops.origins_of("key")} == {
        ("users", "id"),
        ("codes", "id"),
    }
    assert {(o.source.name, o.field) for o in ops.origins_of("id2")} == {("codes", "id")}
    with pytest.raises(ValueError, match="operation 'read' has no output 'nope'"):
        read_users.output("nope")


def test_two_sources_written_straight_map_one_to_one_by_name() -> None:
    a, b = Source("ns", "a"), Source("ns", "b")
    ops = resolve(
        [
            FieldOperation("read a", inputs=[a], outputs=["x", "y"]),
            FieldOperation("read b", inputs=[b], outputs=["z"]),
        ]
    )
    lineage, _ = ops.field_lineage()
    assert {f: [(o.source.name, o.field) for o in v] for f, v in lineage.items()} == {
        "x": [("a", "x")],
        "y": [("a", "y")],
        "z": [("b", "z")],
    }


def test_transform_of_two_reads_depends_on_both() -> None:
    a, b = Source("ns", "a"), Source("ns", "b")
    ops = resolve(
        [
            FieldOperation("read a", inputs=[a], outputs=["x"]),
            FieldOperation("read b", inputs=[b], outputs=["y"]),
            FieldOperation("combine", inputs=["x", "y"], outputs=["p", "q"]),
        ]
    )
    for field in ("p", "q"):
        assert names(ops.trim_to_field(field)) == ["read a", "read b", "combine"]
        assert [(o.source.name, o.field) for o in ops.origins_of(field)] == [("a", "x"), ("b", "y")]


def test_rename_then_drop_never_reaches_the_destination() -> None:
    src = Source("ns", "s")
    ops = resolve(
        [
            FieldOperation("read", inputs=[src], outputs=["a", "b"]),
            FieldOperation("rename", inputs=["a"], outputs=["alpha"]),
            FieldOperation("drop", inputs=["a"]),
            FieldOperation("drop", inputs=["b"]),
        ]
    )
    assert list(ops.alive) == ["alpha"]
    lineage, unreached = ops.field_lineage()
    assert {f: [(o.source.name, o.field) for o in v] for f, v in lineage.items()} == {
        "alpha": [("s", "a")]
    }
    assert unreached == []
    # Forward from the dropped source field: it was read, then dropped.
    assert names(ops.trim_from_source(SourceRef("ns", "s"), "b")) == ["read", "drop"]
    assert names(ops.trim_from_source(SourceRef("ns", "s"), "a")) == ["read", "rename", "drop"]


def test_a_source_whose_fields_are_all_dropped_still_feeds_the_destination() -> None:
    kept, lost = Source("ns", "kept"), Source("ns", "lost")
    ops = resolve(
        [
            FieldOperation("read", inputs=[kept], outputs=["k"]),
            FieldOperation("filter", inputs=[lost], outputs=["flag"]),
            FieldOperation("drop", inputs=["flag"]),
        ]
    )
    lineage, unreached = ops.field_lineage()
    assert list(lineage) == ["k"]
    assert unreached == [SourceRef("ns", "lost")]


def test_explicit_destination_fields_override_the_alive_ones() -> None:
    ops = resolve(seed_operations())
    lineage, _ = ops.field_lineage(["uniqueId", "unknown"])
    assert list(lineage) == ["uniqueId"]  # a stated field no operation made has no lineage


def test_wide_case_is_memoised_and_trims_exactly() -> None:
    """100 fields, 5 rounds of (one all-to-all transform, then 100 one-to-one transforms).

    Field f7 comes from round 5's one-to-one t5_7, which takes f7 from round 5's all-to-all,
    which takes every field of round 4's one-to-ones, and so on: its path is the read, the 5
    all-to-alls, all 400 one-to-ones of rounds 1-4, and t5_7 — 407 operations — and it comes
    from all 100 source fields. A walk per path would visit 100^4 paths."""
    ops = resolve(wide_operations(fields=100, rounds=5))
    assert len(ops.steps) == 1 + 5 * 101
    path = ops.trim_to_field("f7")
    assert len(path) == 407
    assert path[0].name == "read"
    assert [s.name for s in path if s.name.startswith("all")] == [f"all{r}" for r in range(1, 6)]
    assert [s.name for s in path if s.name.startswith("t5_")] == ["t5_7"]
    origins = ops.origins_of("f7")
    assert len(origins) == 100
    assert {o.field for o in origins} == {f"f{i}" for i in range(100)}


def test_validation_names_the_operation_and_the_problem() -> None:
    src = Source("ns", "s")
    cases = [
        (
            [FieldOperation("parse", inputs=["body"], outputs=["x"])],
            "operations[0]: operation 'parse' takes field 'body', which no earlier operation "
            "outputs",
        ),
        (
            [FieldOperation("read", inputs=[src], outputs=["a"]), FieldOperation("drop")],
            "operations[1]: operation 'drop' has no inputs",
        ),
        (
            [FieldOperation("", inputs=[src], outputs=["a"])],
            "operations[0]: the operation name must not be empty",
        ),
        (
            [FieldOperation("read", inputs=[src], outputs=[""])],
            "operations[0]: operation 'read' has an output with an empty name",
        ),
        (
            [FieldOperation("read", inputs=[Source("ns", " ")], outputs=["a"])],
            "reads a Source with an empty namespace or name",
        ),
        ([], "operations: at least one operation is required"),
    ]
    for operations, message in cases:
        with pytest.raises(InvalidInput) as caught:
            resolve(operations)
        assert message in str(caught.value)


def test_no_source_read_at_all_is_rejected() -> None:
    other = FieldOperation("read", inputs=[Source("ns", "s")], outputs=["a"])
    with pytest.raises(ValueError, match="no operation reads a Source"):
        # `a` refers to an operation outside the list, which is also named.
        resolve([FieldOperation("copy", inputs=[other.output("a")], outputs=["b"])])


def test_checksum_changes_with_any_detail_and_only_then() -> None:
    base = resolve(seed_operations()).checksum
    assert resolve(seed_operations()).checksum == base
    changed = seed_operations()
    changed[5] = FieldOperation(
        "create", "a new description", inputs=["name"], outputs=["uniqueId"]
    )
    assert resolve(changed).checksum != base


def test_json_round_trip_through_the_facet_and_the_stored_form() -> None:
    ops = resolve(seed_operations())
    again = resolve(operations_from_json(ops.to_json()))
    assert again.to_json() == ops.to_json()
    assert operation_set_from_stored(ops.to_json()).to_json() == ops.to_json()


def test_json_shape_problems_are_located() -> None:
    cases = [
        ({"x": 1}, "operations: must be an array of operations"),
        ([1], "operations[0]: an operation must be an object"),
        (
            [{"name": "r", "inputs": [{"type": "table"}]}],
            'operations[0].inputs[0]: type must be "source" or "field"',
        ),
        (
            [{"name": "r", "inputs": [{"type": "field", "name": "a", "origin": 3}]}],
            "operations[0].inputs[0]: origin 3 is not the position of an earlier operation",
        ),
        ([{"name": "r", "outputs": "a"}], "operations[0].outputs: must be an array of field names"),
    ]
    for raw, message in cases:
        with pytest.raises(InvalidInput) as caught:
            operations_from_json(raw)
        assert message in str(caught.value)
