"""Parsing OpenLineage documents (design §3.1): strict on identities, lenient on quirks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import dataset_event, job_event, run_event
from upstream.model.errors import InvalidInput
from upstream.model.events import DatasetEvent, JobEvent, RunEvent, event_kind, parse_event


def problems(document: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as caught:
        parse_event(document)
    return [(p.path, p.message) for p in caught.value.problems]


def test_kind_from_schema_url_with_either_defs_style() -> None:
    event = job_event(("a", "b"))
    event["schemaURL"] = "https://openlineage.io/spec/1-0-5/OpenLineage.json#/definitions/JobEvent"
    assert isinstance(parse_event(event), JobEvent)
    assert event_kind(dataset_event("a", "b")) == "DatasetEvent"


def test_kind_from_shape_without_schema_url() -> None:
    for builder, kind in [
        (run_event(("a", "b")), RunEvent),
        (job_event(("a", "b")), JobEvent),
        (dataset_event("a", "b"), DatasetEvent),
    ]:
        builder.pop("schemaURL")
        assert isinstance(parse_event(builder), kind)
    stray = run_event(("a", "b"))
    stray["dataset"] = {"namespace": "x", "name": "y"}  # a stray key does not change the kind
    stray.pop("schemaURL")
    assert isinstance(parse_event(stray), RunEvent)


def test_unknown_spec_version_and_stray_keys_are_accepted() -> None:
    event = run_event(("a", "b"))
    event["schemaURL"] = "https://openlineage.io/spec/9-9-9/OpenLineage.json#/$defs/RunEvent"
    event["extra"] = [1, 2]
    assert isinstance(parse_event(event), RunEvent)


def test_naive_event_time_is_utc() -> None:
    event = run_event(("a", "b"))
    event["eventTime"] = "2024-05-01T10:00:00"
    parsed = parse_event(event)
    assert parsed.eventTime.isoformat() == "2024-05-01T10:00:00+00:00"


def test_offsets_are_normalised_to_utc() -> None:
    event = run_event(("a", "b"))
    event["eventTime"] = "2024-05-01T10:00:00.123456789+10:00"
    assert parse_event(event).eventTime.isoformat() == "2024-05-01T00:00:00.123456+00:00"


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"),
    [
        (lambda e: e["run"].update(runId="123"), "run.runId", "not a UUID"),
        (lambda e: e["run"].update(runId=42), "run.runId", "UUID string"),
        (lambda e: e["job"].update(name=" "), "job.name", "blank"),
        (lambda e: e["job"].pop("namespace"), "job.namespace", "required"),
        (lambda e: e["job"].update(name=7), "job.name", "string"),
        (lambda e: e.update(eventType="FINISHED"), "eventType", "START"),
        (lambda e: e.update(eventTime="yesterday"), "eventTime", "ISO-8601"),
        (lambda e: e.pop("eventTime"), "eventTime", "required"),
        (lambda e: e.pop("producer"), "producer", "required"),
        (lambda e: e.update(inputs=[{"namespace": "n"}]), "inputs[0].name", "required"),
        (lambda e: e.update(outputs="x"), "outputs", "list"),
    ],
)
def test_invalid_events_name_the_path(mutate: Any, path: str, fragment: str) -> None:
    event = run_event(("a", "b"))
    mutate(event)
    found = problems(event)
    assert any(p == path and fragment.lower() in m.lower() for p, m in found), found


def test_null_lists_and_facets_are_empty() -> None:
    event = run_event(("a", "b"))
    event["inputs"] = None
    event["job"]["facets"] = None
    parsed = parse_event(event)
    assert isinstance(parsed, RunEvent)
    assert parsed.inputs == []
    assert parsed.job.facets == {}


def test_not_an_object() -> None:
    assert problems([1]) == [("", "an event must be a JSON object, not array")]
