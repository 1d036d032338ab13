"""How a stored row and what a new event says about the same entity become one row (design
§3.1, §3.2): the rules of a write, as pure functions on typed records, so they are tested in
every delivery order without a database (`tests/ingest/test_merge_rules.py`).

`upstream.store.writer` reads the stored rows, folds the batch's rows together with these
rules, and writes back only what changed; it holds no rule of its own. A record here is the
row as the store keeps it (the same keys as the table), so the writer needs no conversion.

Which parts are independent of arrival order: a run's span (earliest start, latest end), its
state (the latest event by event time; a terminal state wins a tie with a non-terminal one),
the flags that once set stay set (`seen_as_parent`, `has_lineage_facet`, `temporary`), a
relation's lifecycle states and its earliest time, and the declaration in force (the latest
by event time). What follows arrival, as OpenLineage says a re-sent facet replaces the earlier
one: a facet of the same name, and a description or version stated again with another value.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict, TypeVar

from upstream.model.errors import Conflict
from upstream.model.json_text import content_key

#: The states after which a run has ended.
TERMINAL = frozenset({"COMPLETE", "FAIL", "ABORT"})

_T = TypeVar("_T")

#: Facets by name, as events send them.
Facets = dict[str, Any]


class JobRecord(TypedDict):
    """A job's row (`store.schema.jobs`)."""

    id: uuid.UUID
    namespace_id: uuid.UUID
    namespace: str
    name: str
    description: str | None
    job_type: str | None
    integration: str | None
    processing_type: str | None
    seen_as_parent: bool
    facets: Facets
    content_digest: NotRequired[str | None]
    declared_at: datetime | None
    declared_lineage_facet: bool
    created_at: datetime
    updated_at: datetime


class DatasetRecord(TypedDict):
    """A dataset's row (`store.schema.datasets`)."""

    id: uuid.UUID
    namespace_id: uuid.UUID
    namespace: str
    name: str
    description: str | None
    source_name: str | None
    fields: list[Any]
    facets: Facets
    content_digest: NotRequired[str | None]
    declared_at: datetime | None
    created_at: datetime
    updated_at: datetime


class RunRecord(TypedDict):
    """A run's row (`store.schema.runs`); `month` once stored."""

    id: uuid.UUID
    month: NotRequired[int]
    job_id: uuid.UUID
    parent_run_id: uuid.UUID | None
    root_run_id: uuid.UUID | None
    state: str | None
    state_time: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    nominal_start: datetime | None
    nominal_end: datetime | None
    facets: Facets
    has_events: bool
    has_lineage_facet: bool
    created_at: datetime
    updated_at: datetime


class RelationRecord(TypedDict):
    """An access relation's row (`store.schema.relations`); `month` once stored."""

    id: uuid.UUID
    month: NotRequired[int]
    dataset_id: uuid.UUID
    job_id: uuid.UUID
    run_id: uuid.UUID | None
    access: str
    component: str
    lifecycles: list[str] | None
    temporary: bool
    origin: str
    facets: Facets
    event_time: datetime
    version: str | None


class VersionRecord(TypedDict):
    """A dataset version's row (`store.schema.dataset_versions`); `month` once stored."""

    id: uuid.UUID
    month: NotRequired[int]
    dataset_id: uuid.UUID
    run_id: uuid.UUID
    fields: list[Any]
    facets: Facets
    lifecycle: str | None
    created_at: datetime


#: What an event may change in a job's row (`merge_job`): the columns its content hash covers.
JOB_CONTENT = (
    "facets",
    "description",
    "job_type",
    "integration",
    "processing_type",
    "seen_as_parent",
)

#: What an event may change in a dataset's row (`merge_dataset`).
DATASET_CONTENT = ("facets", "fields", "description", "source_name")


def content_digest(row: Mapping[str, Any], content: tuple[str, ...]) -> str:
    """The hash of `row`'s `content` columns (`JOB_CONTENT`, `DATASET_CONTENT`): equal for
    rows whose merge changes nothing. A part of an event (a job's or a dataset's facets)
    gives the same columns whichever event sends it, so translation hashes each distinct
    part once (`ingest.parts`) and its facts carry the hash to the writer."""
    return content_key([row[column] for column in content])


def merge_job(stored: JobRecord, new: JobRecord) -> JobRecord:
    """Facets by name (the later replaces), what the event states of its description and
    type, and `seen_as_parent` once any run named the job as its parent."""
    merged = stored.copy()
    merged["facets"] = {**stored["facets"], **new["facets"]}
    merged["description"] = _stated(new["description"], stored["description"])
    merged["job_type"] = _stated(new["job_type"], stored["job_type"])
    merged["integration"] = _stated(new["integration"], stored["integration"])
    merged["processing_type"] = _stated(new["processing_type"], stored["processing_type"])
    merged["seen_as_parent"] = stored["seen_as_parent"] or new["seen_as_parent"]
    return _touched(stored, merged, new["updated_at"])


def merge_dataset(stored: DatasetRecord, new: DatasetRecord) -> DatasetRecord:
    """Facets by name; the fields only when the event states them (a `schema` facet, or
    recorded operations), so a run that merely reads a table keeps its schema."""
    merged = stored.copy()
    merged["facets"] = {**stored["facets"], **new["facets"]}
    if new["fields"] or "schema" in new["facets"]:
        merged["fields"] = new["fields"]
    merged["description"] = _stated(new["description"], stored["description"])
    merged["source_name"] = _stated(new["source_name"], stored["source_name"])
    return _touched(stored, merged, new["updated_at"])


def merge_run(stored: RunRecord, new: RunRecord) -> RunRecord:
    """A run accumulates across its events (design §3.1): facets by name, the earliest
    start, the latest end, and the state of the latest event (a terminal state wins a tie).
    A run first known only as another's parent takes its job from its own events; a run
    reported again for a different job is refused."""
    merged = stored.copy()
    if new["has_events"]:
        if stored["has_events"] and stored["job_id"] != new["job_id"]:
            raise Conflict.at(
                "run.runId", f"run {new['id']} was already reported for a different job"
            )
        merged["job_id"] = new["job_id"]
        merged["has_events"] = True
        merged["started_at"] = earliest(stored["started_at"], new["started_at"])
        merged["ended_at"] = latest(stored["ended_at"], new["ended_at"])
        if new["state"] is not None and _later_state(stored, new):
            merged["state"], merged["state_time"] = new["state"], new["state_time"]
    merged["facets"] = {**stored["facets"], **new["facets"]}
    merged["parent_run_id"] = _stated(new["parent_run_id"], stored["parent_run_id"])
    merged["root_run_id"] = _stated(new["root_run_id"], stored["root_run_id"])
    merged["nominal_start"] = _stated(new["nominal_start"], stored["nominal_start"])
    merged["nominal_end"] = _stated(new["nominal_end"], stored["nominal_end"])
    merged["has_lineage_facet"] = stored["has_lineage_facet"] or new["has_lineage_facet"]
    return _touched(stored, merged, new["updated_at"])


def _later_state(stored: RunRecord, new: RunRecord) -> bool:
    """Whether `new`'s state replaces the stored one: a later event, or a terminal state
    at the same time as a non-terminal one."""
    if stored["state_time"] is None:
        return True
    if new["state_time"] != stored["state_time"]:
        return new["state_time"] is not None and new["state_time"] > stored["state_time"]
    return new["state"] in TERMINAL or stored["state"] not in TERMINAL


def merge_relation(stored: RelationRecord, new: RelationRecord) -> RelationRecord:
    """Facets by name; every lifecycle state once, sorted (CREATE on START and DROP on
    COMPLETE are two facts); temporary once marked; listed by the event ("io") over implied
    by an edge; the earliest time; the version the latest event named, else the stored one."""
    merged = stored.copy()
    merged["facets"] = {**stored["facets"], **new["facets"]}
    lifecycles = {*(stored["lifecycles"] or ()), *(new["lifecycles"] or ())}
    merged["lifecycles"] = sorted(lifecycles) or None
    merged["temporary"] = stored["temporary"] or new["temporary"]
    merged["origin"] = "io" if "io" in (stored["origin"], new["origin"]) else "edge"
    merged["event_time"] = min(stored["event_time"], new["event_time"])
    merged["version"] = new["version"] or stored["version"]
    return merged


def merge_version(stored: VersionRecord, new: VersionRecord) -> VersionRecord:
    """Facets by name; the fields and lifecycle the event states, else the stored ones."""
    merged = stored.copy()
    merged["facets"] = {**stored["facets"], **new["facets"]}
    merged["fields"] = new["fields"] or stored["fields"]
    merged["lifecycle"] = new["lifecycle"] or stored["lifecycle"]
    return merged


def declaration_replaces(current: datetime | None, candidate: datetime) -> bool:
    """Whether a declaration (a JobEvent's or DatasetEvent's lineage) made at `candidate`
    replaces the one in force, made at `current` (None: none yet): the latest by event time
    stands, whatever order they arrive in; of two at the same time, the one written last."""
    return current is None or candidate >= current


def earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    """The earlier of two optional instants (either, when one is unknown)."""
    if a is None or b is None:
        return a or b
    return min(a, b)


def latest(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later of two optional instants (either, when one is unknown)."""
    if a is None or b is None:
        return a or b
    return max(a, b)


def _stated(new: _T | None, stored: _T | None) -> _T | None:
    """What the event states, else what is stored: a value is never unset by an event
    that does not mention it."""
    return stored if new is None else new


_Touched = TypeVar("_Touched", JobRecord, DatasetRecord, RunRecord)


def _touched(stored: _Touched, merged: _Touched, updated_at: datetime) -> _Touched:
    """Move `updated_at` only when something really changed. Rows of one batch folded
    together have the same time: nothing to compare (their facets are kilobytes)."""
    if updated_at != stored["updated_at"] and _differ(stored, merged):
        merged["updated_at"] = updated_at
    return merged


def _differ(stored: Mapping[str, object], merged: Mapping[str, object]) -> bool:
    """Whether `merged` changed anything of `stored` but the time of the change."""
    return any(merged[k] != stored[k] for k in merged if k != "updated_at")
