"""A field name is never empty or blank, wherever an event names a field: the output fields of
`columnLineage` and their input fields, the `fields` of a lineage facet entry (job or dataset
facet) and their inputs, the `schema` facet's fields at any depth. Such an event is refused
whole, naming the path; nothing of it is stored (design §3.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import (
    column_lineage,
    dataset_entry,
    dataset_event,
    dataset_input,
    ds,
    lineage_facet,
    run_event,
    schema_facet,
)
from tests.readback import counts
from upstream.ingest.service import prepare
from upstream.model.errors import InvalidInput
from upstream.store.engine import Store

BLANKS = ["", " ", "\t", " \n "]


def with_output(**facets: Any) -> dict[str, Any]:
    return run_event(
        ("names", "job"), inputs=[ds("names", "in")], outputs=[ds("names", "out", **facets)]
    )


CASES: dict[str, tuple[Callable[[str], dict[str, Any]], str, str]] = {
    # id: (event with the blank name, path, message with the blank shown as repr)
    "columnLineage output field": (
        lambda blank: with_output(columnLineage=column_lineage({blank: [("names", "in", "a")]})),
        "outputs[0].facets.columnLineage.fields",
        "the key {!r} must not be blank",
    ),
    "columnLineage input field": (
        lambda blank: with_output(columnLineage=column_lineage({"a": [("names", "in", blank)]})),
        "outputs[0].facets.columnLineage.fields.a.inputFields[0].field",
        "must not be blank",
    ),
    "columnLineage dataset-wide input field": (
        lambda blank: with_output(
            columnLineage=column_lineage({}, dataset=[("names", "in", blank)])
        ),
        "outputs[0].facets.columnLineage.dataset[0].field",
        "must not be blank",
    ),
    "lineage facet target field": (
        lambda blank: run_event(
            ("names", "job"),
            job_facets=lineage_facet(
                dataset_entry("names", "out", fields={blank: [dataset_input("names", "in", "a")]})
            ),
        ),
        "job.facets.lineage.entries[0].fields",
        "the key {!r} must not be blank",
    ),
    "lineage facet input field": (
        lambda blank: run_event(
            ("names", "job"),
            job_facets=lineage_facet(
                dataset_entry("names", "out", fields={"a": [dataset_input("names", "in", blank)]})
            ),
        ),
        "job.facets.lineage.entries[0].fields.a.inputs[0].field",
        "must not be blank",
    ),
    "dataset lineage facet target field": (
        lambda blank: dataset_event(
            "names",
            "out",
            lineage={
                "_producer": "https://example.com/test",
                "_schemaURL": "https://example.com/lineage.json",
                "fields": {blank: {"inputs": [dataset_input("names", "in", "a")]}},
            },
        ),
        "dataset.facets.lineage.fields",
        "the key {!r} must not be blank",
    ),
    "schema field": (
        lambda blank: with_output(schema=schema_facet(("id", "int"), (blank, "int"))),
        "outputs[0].facets.schema.fields[1].name",
        "must not be blank",
    ),
    "nested schema field": (
        lambda blank: with_output(
            schema={**schema_facet(), "fields": [{"name": "a", "fields": [{"name": blank}]}]}
        ),
        "outputs[0].facets.schema.fields[0].fields[0].name",
        "must not be blank",
    ),
}


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_blank_field_name_is_refused_naming_the_path(case: str, blank: str) -> None:
    build, path, message = CASES[case]
    with pytest.raises(InvalidInput) as refused:
        prepare([build(blank)], batch=False)
    assert [(p.path, p.message) for p in refused.value.problems] == [(path, message.format(blank))]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_events_with_a_name_are_accepted(case: str) -> None:
    """Guard: each case is refused for its blank name alone."""
    build, _, _ = CASES[case]
    assert prepare([build("a")], batch=False)


def test_the_api_refuses_the_event_and_stores_nothing(client: TestClient, store: Store) -> None:
    before = counts(store)
    for case in sorted(CASES):
        build, path, _ = CASES[case]
        response = client.post("/api/v1/lineage", json=build(" "))
        assert response.status_code == 422, (case, response.text)
        assert response.json()["errors"][0]["path"] == path, case
    assert counts(store) == before
