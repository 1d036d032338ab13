"""Properties over generated event shapes (design §3.1): a valid event is accepted and posting
it again changes nothing; any mutation of a valid event is accepted or refused with a 4xx,
never a 5xx, and a refused one changes nothing stored."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from tests.builders import (
    DATASET_EVENT_SCHEMA,
    JOB_EVENT_SCHEMA,
    PRODUCER,
    RUN_EVENT_SCHEMA,
    column_lineage,
    dataset_entry,
    dataset_input,
    iso,
    job_entry,
    job_input,
    lineage_facet,
)
from tests.readback import counts
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store.engine import Store

PROPERTY_SETTINGS = examples(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)

# Names: a small pool, so generated events meet on the same datasets and jobs, plus any text
# without NUL or lone surrogates (which no database stores, and which the HTTP client cannot
# even encode; refusing them is tested in test_bad_input).
any_text = st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=12)
names = st.sampled_from(
    ["orders", "users", "s3://b/k", "a b", "ünï/çødé", "x:y@z%_"]
) | any_text.filter(str.strip)
namespaces = st.sampled_from(["props", "postgres://db:5432", "s3://bucket"])


def run_id_of(job: dict[str, Any], number: int) -> str:
    """A run id that always belongs to the same job: a run reported for two jobs is refused
    (rightly), and generated ids would otherwise meet across examples."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job['namespace']}/{job['name']}#{number}"))


run_numbers = st.integers(0, 2**32)
times = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
).map(iso)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)
unknown_facets = st.dictionaries(
    st.sampled_from(["custom", "spark_version", "_weird", "airflow"]),
    st.dictionaries(any_text, json_values, max_size=3),
    max_size=2,
)


@st.composite
def datasets(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {"namespace": draw(namespaces), "name": draw(names)}
    facets = draw(unknown_facets)
    if draw(st.booleans()):
        fields = draw(st.lists(names, max_size=3, unique=True))
        facets["schema"] = {"fields": [{"name": f, "type": "STRING"} for f in fields]}
    if draw(st.booleans()):
        facets["columnLineage"] = column_lineage(
            {draw(names): [(draw(namespaces), draw(names), draw(names))]}
        )
    if draw(st.booleans()):
        facets["lifecycleStateChange"] = {
            "lifecycleStateChange": draw(st.sampled_from(["CREATE", "DROP", "OVERWRITE"]))
        }
    if draw(st.booleans()):
        facets["symlinks"] = {"identifiers": [{"namespace": draw(namespaces), "name": draw(names)}]}
    if facets:
        doc["facets"] = facets
    return doc


@st.composite
def job_facets(draw: st.DrawFn, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    facets: dict[str, Any] = draw(unknown_facets)
    if draw(st.booleans()):
        facets["jobType"] = {
            "jobType": draw(st.sampled_from(["DAG", "TASK", "QUERY"])),
            "integration": "props",
            "processingType": "BATCH",
        }
    if outputs and draw(st.booleans()):
        target = outputs[0]
        sources = [dataset_input(draw(namespaces), draw(names), type="DIRECT")]
        if draw(st.booleans()):
            sources.append(job_input(draw(namespaces), draw(names)))
        entries = [dataset_entry(target["namespace"], target["name"], inputs=sources)]
        if draw(st.booleans()):
            entries.append(job_entry(inputs=[job_input(draw(namespaces), draw(names))]))
        facets.update(lineage_facet(*entries))
    return facets


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid RunEvent, JobEvent or DatasetEvent."""
    kind = draw(st.sampled_from(["RunEvent", "JobEvent", "DatasetEvent"]))
    base = {"eventTime": draw(times), "producer": PRODUCER}
    if kind == "DatasetEvent":
        return {**base, "schemaURL": DATASET_EVENT_SCHEMA, "dataset": draw(datasets())}
    inputs = draw(st.lists(datasets(), max_size=3))
    outputs = draw(st.lists(datasets(), max_size=3))
    job = {
        "namespace": draw(namespaces),
        "name": draw(names),
        "facets": draw(job_facets(outputs)),
    }
    event = {**base, "job": job, "inputs": inputs, "outputs": outputs}
    if kind == "JobEvent":
        return {**event, "schemaURL": JOB_EVENT_SCHEMA}
    run: dict[str, Any] = {"runId": run_id_of(job, draw(run_numbers)), "facets": {}}
    if draw(st.booleans()):
        parent_job = {"namespace": draw(namespaces), "name": draw(names)}
        run["facets"]["parent"] = {
            "run": {"runId": run_id_of(parent_job, draw(run_numbers))},
            "job": parent_job,
        }
    return {
        **event,
        "schemaURL": RUN_EVENT_SCHEMA,
        "eventType": draw(st.sampled_from(["START", "RUNNING", "COMPLETE", "FAIL", "ABORT"])),
        "run": run,
    }


def paths(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every location in a JSON document, the document itself first."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from paths(value, (*prefix, index))


@st.composite
def mutated_events(draw: st.DrawFn) -> Any:
    """A valid event with one location deleted or replaced by arbitrary JSON."""
    event = json.loads(json.dumps(draw(events())))
    where = draw(st.sampled_from(list(paths(event))))
    replacement = draw(json_values)
    if not where:
        return replacement
    parent = event
    for step in where[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[where[-1]]
    else:
        parent[where[-1]] = replacement
    return event


@pytest.fixture
def lenient_client(settings: Settings) -> Iterator[TestClient]:
    """The API, answering a crash as the 500 a client would see instead of raising it."""
    app = create_app(settings, migrate=False)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@examples(PROPERTY_SETTINGS, max_examples=30)
@given(event=events())
def test_valid_events_are_accepted_and_idempotent(
    lenient_client: TestClient, store: Store, event: dict[str, Any]
) -> None:
    first = lenient_client.post("/api/v1/lineage", json=event)
    assert first.status_code == 201, first.text[:500]
    after_first = counts(store)
    again = lenient_client.post("/api/v1/lineage", json=event)
    assert again.status_code == 201, again.text[:500]
    assert counts(store) == after_first


@examples(PROPERTY_SETTINGS, max_examples=60)
@given(document=mutated_events())
def test_mutated_events_are_accepted_or_refused_cleanly(
    lenient_client: TestClient, store: Store, document: Any
) -> None:
    before = counts(store)
    response = lenient_client.post("/api/v1/lineage", json=document)
    assert response.status_code == 201 or 400 <= response.status_code < 500, response.text[:500]
    if response.status_code != 201:
        error = response.json()
        assert error["code"] == response.status_code
        assert error["message"]
        assert counts(store) == before


@examples(PROPERTY_SETTINGS, max_examples=15)
@given(batch=st.lists(events(), min_size=1, max_size=4), bad=mutated_events())
def test_a_batch_is_all_or_nothing(
    lenient_client: TestClient, store: Store, batch: list[dict[str, Any]], bad: Any
) -> None:
    before = counts(store)
    response = lenient_client.post("/api/v1/lineage", json=[*batch, bad])
    assert response.status_code == 201 or 400 <= response.status_code < 500, response.text[:500]
    if response.status_code != 201:
        assert counts(store) == before
