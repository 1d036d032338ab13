"""The merge rules of a write (design §3.1, §3.2) as pure functions, without a database: what
a run, a job, a dataset, a relation and a version become from the events that name them, in
every order those events arrive in, and what follows arrival order by design."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import reduce
from typing import TypeVar

import pytest

from upstream.model.errors import Conflict
from upstream.model.merge_rules import (
    DatasetRecord,
    JobRecord,
    RelationRecord,
    RunRecord,
    VersionRecord,
    declaration_replaces,
    merge_dataset,
    merge_job,
    merge_relation,
    merge_run,
    merge_version,
)

R = TypeVar("R")
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
JOB, OTHER_JOB, RUN, PARENT = (uuid.uuid5(uuid.NAMESPACE_URL, n) for n in "jJrp")


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def every_order(records: Sequence[R], merge: Callable[[R, R], R]) -> list[R]:
    """`records` folded by `merge` in each order they could arrive in."""
    return [reduce(merge, order) for order in itertools.permutations(records)]


def run_event(
    state: str | None,
    minute: int,
    *,
    received: int = 0,
    facets: dict[str, object] | None = None,
    has_events: bool = True,
    job: uuid.UUID = JOB,
    parent: uuid.UUID | None = None,
) -> RunRecord:
    """A run's row as one event states it (as `store.writer` builds it)."""
    terminal = state in ("COMPLETE", "FAIL", "ABORT")
    return RunRecord(
        id=RUN,
        job_id=job,
        parent_run_id=parent,
        root_run_id=parent,
        state=state if has_events else None,
        state_time=at(minute) if has_events and state else None,
        started_at=at(minute) if has_events else None,
        ended_at=at(minute) if has_events and terminal else None,
        nominal_start=None,
        nominal_end=None,
        facets=facets or {},
        has_events=has_events,
        has_lineage_facet=False,
        created_at=at(received),
        updated_at=at(received),
    )


def test_a_runs_span_and_state_are_the_same_in_every_order() -> None:
    events = [run_event("START", 0, received=1), run_event("RUNNING", 5, received=2)]
    events.append(run_event("COMPLETE", 9, received=3))
    for merged in every_order(events, merge_run):
        assert (merged["started_at"], merged["ended_at"]) == (at(0), at(9))
        assert (merged["state"], merged["state_time"]) == ("COMPLETE", at(9))


def test_a_terminal_state_wins_a_tie_with_a_non_terminal_one() -> None:
    events = [run_event("RUNNING", 4, received=1), run_event("FAIL", 4, received=2)]
    assert {m["state"] for m in every_order(events, merge_run)} == {"FAIL"}


def test_of_two_terminal_states_at_one_time_the_later_arrival_stands() -> None:
    complete, abort = run_event("COMPLETE", 4, received=1), run_event("ABORT", 4, received=2)
    assert merge_run(complete, abort)["state"] == "ABORT"
    assert merge_run(abort, complete)["state"] == "COMPLETE"


def test_a_run_known_as_a_parent_takes_its_job_from_its_own_events() -> None:
    known_as_parent = run_event(None, 0, has_events=False, job=OTHER_JOB)
    own = run_event("START", 3, received=1)
    for merged in every_order([known_as_parent, own], merge_run):
        assert merged["job_id"] == JOB
        assert merged["has_events"] is True
        assert merged["started_at"] == at(3)


def test_a_run_reported_again_for_another_job_is_refused() -> None:
    with pytest.raises(Conflict, match=r"run\.runId: run .* already reported"):
        merge_run(run_event("START", 0), run_event("COMPLETE", 5, job=OTHER_JOB))


def test_a_runs_facets_accumulate_and_a_resent_facet_replaces_the_earlier() -> None:
    start = run_event("START", 0, facets={"a": 1, "shared": "start"}, parent=PARENT)
    complete = run_event("COMPLETE", 5, received=1, facets={"b": 2, "shared": "complete"})
    merged = merge_run(start, complete)
    assert merged["facets"] == {"a": 1, "b": 2, "shared": "complete"}
    # A value the later event does not state is kept.
    assert merged["parent_run_id"] == PARENT


def test_updated_at_moves_only_when_something_changed() -> None:
    stored = run_event("START", 0, received=0)
    assert merge_run(stored, run_event("START", 0, received=7))["updated_at"] == at(0)
    assert merge_run(stored, run_event("COMPLETE", 5, received=7))["updated_at"] == at(7)


def job_event(
    *,
    facets: dict[str, object] | None = None,
    description: str | None = None,
    job_type: str | None = None,
    parent: bool = False,
    received: int = 0,
) -> JobRecord:
    return JobRecord(
        id=JOB,
        namespace_id=JOB,
        namespace="ns",
        name="job",
        description=description,
        job_type=job_type,
        integration=None,
        processing_type=None,
        seen_as_parent=parent,
        facets=facets or {},
        declared_at=None,
        declared_lineage_facet=False,
        created_at=at(received),
        updated_at=at(received),
    )


def test_a_job_seen_as_parent_stays_one_and_its_type_is_kept_in_every_order() -> None:
    events = [
        job_event(facets={"sql": "q"}, job_type="DAG", received=1),
        job_event(parent=True, received=2),
        job_event(facets={"ownership": "o"}, description="nightly", received=3),
    ]
    for merged in every_order(events, merge_job):
        assert merged["seen_as_parent"] is True
        assert (merged["job_type"], merged["description"]) == ("DAG", "nightly")
        assert merged["facets"] == {"sql": "q", "ownership": "o"}


def dataset_event(
    *,
    fields: list[object] | None = None,
    facets: dict[str, object] | None = None,
    received: int = 0,
) -> DatasetRecord:
    return DatasetRecord(
        id=JOB,
        namespace_id=JOB,
        namespace="ns",
        name="table",
        description=None,
        source_name=None,
        fields=fields or [],
        facets=facets or {},
        declared_at=None,
        created_at=at(received),
        updated_at=at(received),
    )


def test_a_dataset_keeps_its_schema_when_a_reader_states_none() -> None:
    schema = [{"name": "id", "type": "int"}]
    written = dataset_event(fields=schema, facets={"schema": {"fields": schema}})
    read = dataset_event(facets={"dataSource": {"name": "db"}}, received=1)
    for merged in every_order([written, read], merge_dataset):
        assert merged["fields"] == schema
        assert set(merged["facets"]) == {"schema", "dataSource"}


def test_an_empty_schema_facet_empties_the_fields() -> None:
    written = dataset_event(fields=[{"name": "id"}], facets={"schema": {"fields": [{}]}})
    emptied = dataset_event(facets={"schema": {"fields": []}}, received=1)
    assert merge_dataset(written, emptied)["fields"] == []


def relation_event(
    *,
    lifecycle: str | None = None,
    temporary: bool = False,
    origin: str = "io",
    minute: int = 0,
    version: str | None = None,
) -> RelationRecord:
    return RelationRecord(
        id=RUN,
        dataset_id=JOB,
        job_id=JOB,
        run_id=RUN,
        access="write",
        component="",
        lifecycles=[lifecycle] if lifecycle else None,
        temporary=temporary,
        origin=origin,
        facets={},
        event_time=at(minute),
        version=version,
    )


def test_a_relation_keeps_every_lifecycle_state_its_mark_and_earliest_time() -> None:
    events = [
        relation_event(lifecycle="DROP", minute=9),
        relation_event(lifecycle="CREATE", minute=0, origin="edge"),
        relation_event(temporary=True, minute=5, origin="edge"),
    ]
    for merged in every_order(events, merge_relation):
        assert merged["lifecycles"] == ["CREATE", "DROP"]
        assert merged["temporary"] is True
        assert merged["origin"] == "io"
        assert merged["event_time"] == at(0)


def test_a_relation_implied_by_edges_alone_stays_implied() -> None:
    events = [relation_event(origin="edge"), relation_event(origin="edge", minute=3)]
    assert {m["origin"] for m in every_order(events, merge_relation)} == {"edge"}
    assert merge_relation(events[0], events[1])["lifecycles"] is None


def test_a_relation_keeps_a_named_version_when_a_later_event_names_none() -> None:
    named, unnamed = relation_event(version="v1"), relation_event(minute=2)
    assert {m["version"] for m in every_order([named, unnamed], merge_relation)} == {"v1"}


def version_event(
    *, fields: list[object] | None = None, lifecycle: str | None = None
) -> VersionRecord:
    return VersionRecord(
        id=RUN,
        dataset_id=JOB,
        run_id=RUN,
        fields=fields or [],
        facets={},
        lifecycle=lifecycle,
        created_at=T0,
    )


def test_a_version_keeps_the_fields_and_lifecycle_its_events_state() -> None:
    schema: list[object] = [{"name": "id"}]
    events = [version_event(fields=schema), version_event(lifecycle="OVERWRITE")]
    for merged in every_order(events, merge_version):
        assert (merged["fields"], merged["lifecycle"]) == (schema, "OVERWRITE")


def test_the_latest_declaration_by_event_time_stands_in_every_order() -> None:
    times = [at(3), at(1), at(7), at(5)]
    for order in itertools.permutations(times):
        in_force: datetime | None = None
        for candidate in order:
            if declaration_replaces(in_force, candidate):
                in_force = candidate
        assert in_force == at(7)
    assert declaration_replaces(at(2), at(2))
    assert not declaration_replaces(at(2), at(1))
