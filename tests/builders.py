"""Builders for OpenLineage event documents, so tests state only what matters to them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

PRODUCER = "https://github.com/upstream-lineage/upstream/tests"
RUN_EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
JOB_EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"
DATASET_EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
LINEAGE_SCHEMA = "https://openlineage.io/spec/facets/1-0-0/LineageFacet.json#/$defs/LineageJobFacet"

#: A fixed "now" for events, recent enough to fall in default windows when tests shift it.
BASE_TIME = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def ds(namespace: str, name: str, **facets: Any) -> dict[str, Any]:
    """A dataset reference (input or output) with optional dataset facets."""
    doc: dict[str, Any] = {"namespace": namespace, "name": name}
    if facets:
        doc["facets"] = facets
    return doc


def run_event(
    job: tuple[str, str],
    *,
    run_id: str | None = None,
    event_type: str = "COMPLETE",
    time: datetime | None = None,
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    job_facets: dict[str, Any] | None = None,
    run_facets: dict[str, Any] | None = None,
    parent: tuple[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """A RunEvent; `parent` is ((namespace, name), run_id) of the parent (workflow) run."""
    facets = dict(run_facets or {})
    if parent is not None:
        (p_ns, p_name), p_run = parent
        facets["parent"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ParentRunFacet.json",
            "run": {"runId": p_run},
            "job": {"namespace": p_ns, "name": p_name},
        }
    return {
        "eventType": event_type,
        "eventTime": iso(time or BASE_TIME),
        "run": {"runId": run_id or str(uuid.uuid4()), "facets": facets},
        "job": {"namespace": job[0], "name": job[1], "facets": job_facets or {}},
        "inputs": inputs or [],
        "outputs": outputs or [],
        "producer": PRODUCER,
        "schemaURL": RUN_EVENT_SCHEMA,
    }


def job_event(
    job: tuple[str, str],
    *,
    time: datetime | None = None,
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "eventTime": iso(time or BASE_TIME),
        "job": {"namespace": job[0], "name": job[1], "facets": job_facets or {}},
        "inputs": inputs or [],
        "outputs": outputs or [],
        "producer": PRODUCER,
        "schemaURL": JOB_EVENT_SCHEMA,
    }


def dataset_event(
    namespace: str, name: str, *, time: datetime | None = None, **facets: Any
) -> dict[str, Any]:
    return {
        "eventTime": iso(time or BASE_TIME),
        "dataset": ds(namespace, name, **facets),
        "producer": PRODUCER,
        "schemaURL": DATASET_EVENT_SCHEMA,
    }


def lineage_facet(*entries: dict[str, Any]) -> dict[str, Any]:
    """`job.facets.lineage` with the given entries."""
    return {
        "lineage": {"_producer": PRODUCER, "_schemaURL": LINEAGE_SCHEMA, "entries": list(entries)}
    }


def dataset_entry(
    namespace: str,
    name: str,
    inputs: list[dict[str, Any]] | None = None,
    fields: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "DATASET", "namespace": namespace, "name": name}
    if inputs is not None:
        entry["inputs"] = inputs
    if fields is not None:
        entry["fields"] = {f: {"inputs": i} for f, i in fields.items()}
    return entry


def job_entry(
    namespace: str | None = None,
    name: str | None = None,
    inputs: list[dict[str, Any]] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "JOB", "inputs": inputs or []}
    if namespace is not None:
        entry["namespace"] = namespace
    if name is not None:
        entry["name"] = name
    if run_id is not None:
        entry["runId"] = run_id
    return entry


def dataset_input(
    namespace: str, name: str, field: str | None = None, **transformation: Any
) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "DATASET", "namespace": namespace, "name": name}
    if field is not None:
        source["field"] = field
    if transformation:
        source["transformations"] = [transformation]
    return source


def job_input(
    namespace: str | None = None, name: str | None = None, run_id: str | None = None
) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "JOB"}
    if namespace is not None:
        source["namespace"] = namespace
    if name is not None:
        source["name"] = name
    if run_id is not None:
        source["runId"] = run_id
    return source


def column_lineage(
    fields: dict[str, list[tuple[str, str, str]]], dataset: list[tuple[str, str, str]] | None = None
) -> dict[str, Any]:
    """A columnLineage facet: output field -> [(namespace, name, field)] of inputs."""
    facet: dict[str, Any] = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
        "fields": {
            out: {"inputFields": [{"namespace": n, "name": m, "field": f} for n, m, f in ins]}
            for out, ins in fields.items()
        },
    }
    if dataset is not None:
        facet["dataset"] = [{"namespace": n, "name": m, "field": f} for n, m, f in dataset]
    return facet


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def schema_facet(*fields: tuple[str, str]) -> dict[str, Any]:
    """A schema dataset facet with (name, type) fields."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
        "fields": [{"name": name, "type": kind} for name, kind in fields],
    }
