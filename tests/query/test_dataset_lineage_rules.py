"""The pure rules behind dataset lineage: workflows, temporaries, rollup, collapse, params."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from upstream.model.errors import InvalidInput
from upstream.model.workflow import (
    ChainLink,
    TemporaryMark,
    is_temporary_to,
    is_workflow,
    workflow_run,
)
from upstream.query.collapse import KeyedRelation, collapse
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery
from upstream.query.relations import Relation
from upstream.query.rollup import roll_up, workflow_pairs

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def uid(label: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, label)


# -- is_workflow ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_type", "seen_as_parent", "expected"),
    [
        ("DAG", False, True),
        ("dag", False, True),
        ("WORKFLOW", False, True),
        ("DAG", True, True),
        (None, True, True),
        ("JOB", True, True),  # a dbt run, parent of its models
        ("APPLICATION", True, True),  # a Spark application, parent of its SQL jobs
        ("TASK", True, False),  # an Airflow task that started a Spark application
        ("QUERY", True, False),
        ("MODEL", True, False),
        ("SQL_JOB", True, False),
        (None, False, False),
        ("JOB", False, False),
        ("TASK", False, False),
    ],
)
def test_is_workflow(job_type: str | None, seen_as_parent: bool, expected: bool) -> None:
    assert is_workflow(job_type, seen_as_parent) is expected


# -- workflow_run ---------------------------------------------------------------------------

APP = ChainLink(uid("app-run"), uid("app"), False)
TASK = ChainLink(uid("task-run"), uid("task"), False)
DAG = ChainLink(uid("dag-run"), uid("dag"), True)
INNER = ChainLink(uid("inner-run"), uid("inner"), True)


def test_a_run_without_parent_is_in_no_workflow() -> None:
    assert workflow_run([APP]) is None


def test_the_nearest_workflow_ancestor_wins() -> None:
    assert workflow_run([APP, INNER, DAG]) == INNER


def test_a_leaf_parent_is_skipped_for_the_workflow_above_it() -> None:
    assert workflow_run([APP, TASK, DAG]) == DAG


def test_without_a_workflow_in_the_chain_the_root_is_the_workflow_run() -> None:
    assert workflow_run([APP, TASK]) == TASK


def test_a_workflow_run_is_its_own_workflow_run() -> None:
    assert workflow_run([DAG]) == DAG
    assert workflow_run([INNER, DAG]) == INNER


# -- is_temporary_to ------------------------------------------------------------------------

WF_RUN = uuid.UUID("e4051038-9661-11e6-8060-000000d79ea8")


def test_temporary_by_cdap_name_suffix() -> None:
    assert is_temporary_to("conn-0.e4051038-9661-11e6-8060-000000d79ea8", WF_RUN, [])
    assert is_temporary_to("conn-0.E4051038-9661-11E6-8060-000000D79EA8", WF_RUN, [])
    assert not is_temporary_to("conn-0.e0591f36-9661-11e6-af4a-0000007182af", WF_RUN, [])


def test_temporary_by_producer_mark() -> None:
    assert is_temporary_to("scratch", WF_RUN, [TemporaryMark(False), TemporaryMark(True)])


def test_temporary_when_created_and_dropped() -> None:
    marks = [TemporaryMark(False, ("CREATE",)), TemporaryMark(False, ("drop",))]
    assert is_temporary_to("scratch", WF_RUN, marks)
    assert not is_temporary_to("scratch", WF_RUN, [TemporaryMark(False, ("CREATE",))])
    assert not is_temporary_to("scratch", WF_RUN, [TemporaryMark(False, ("DROP",))])
    overwritten = [TemporaryMark(False, ("CREATE",)), TemporaryMark(False, ("OVERWRITE",))]
    assert not is_temporary_to("scratch", WF_RUN, overwritten)


def test_temporary_when_one_run_created_and_dropped_it() -> None:
    """One relation that kept both states (CREATE on START, DROP on COMPLETE) is enough."""
    assert is_temporary_to("scratch", WF_RUN, [TemporaryMark(False, ("CREATE", "DROP"))])
    assert TemporaryMark(False, ("OVERWRITE", "drop")).creates_or_drops
    assert not TemporaryMark(False, ("OVERWRITE",)).creates_or_drops


# -- roll_up --------------------------------------------------------------------------------


def test_roll_up_replaces_runs_inside_workflows_and_drops_temporaries() -> None:
    d1, d2, tmp = uid("D1"), uid("D2"), uid("tmp")
    mr1, p3, wf1 = uid("mr1"), uid("p3"), uid("wf1")
    r1, r3, w = uid("r1"), uid("r3"), uid("w")
    links = {r1: ChainLink(w, wf1, True)}
    relations = [
        Relation(d1, mr1, r1, "write"),
        Relation(d2, mr1, r1, "read", "mapper"),
        Relation(tmp, mr1, r1, "write"),
        Relation(d1, p3, r3, "write"),
        Relation(d1, p3, None, "read"),
    ]
    assert workflow_pairs(relations, links.get) == {(d1, w), (d2, w), (tmp, w)}
    rolled = roll_up(relations, links.get, {(tmp, w)})
    assert rolled.workflows == {wf1}
    assert rolled.relations == {
        Relation(d1, wf1, w, "write"),
        Relation(d2, wf1, w, "read", "mapper"),
        Relation(d1, p3, r3, "write"),
        Relation(d1, p3, None, "read"),
    }


# -- collapse -------------------------------------------------------------------------------


def keyed(access: str, run: str | None, component: str = "") -> KeyedRelation:
    return KeyedRelation("dataset.ns.d1", "job.ns.s1", access, run, component)


SEED_RELATIONS = [keyed("read", "r1"), keyed("write", "r1"), keyed("read", "r2")]


def entry(accesses: list[str], runs: list[str], components: list[str] | None = None) -> dict:
    return {
        "data": "dataset.ns.d1",
        "program": "job.ns.s1",
        "accesses": accesses,
        "runs": runs,
        "components": components or [],
    }


def test_collapse_run_unions_runs_per_access() -> None:
    assert collapse(SEED_RELATIONS, {"run"}, str) == [
        entry(["read"], ["r1", "r2"]),
        entry(["write"], ["r1"]),
    ]


def test_collapse_access_unions_accesses_per_run() -> None:
    assert collapse(SEED_RELATIONS, {"access"}, str) == [
        entry(["read"], ["r2"]),
        entry(["read", "write"], ["r1"]),
    ]


def test_collapse_everything_merges_one_dataset_program_pair() -> None:
    assert collapse(SEED_RELATIONS, {"access", "run", "component"}, str) == [
        entry(["read", "write"], ["r1", "r2"])
    ]


def test_no_collapse_keeps_each_relation() -> None:
    assert collapse(SEED_RELATIONS, set(), str) == [
        entry(["read"], ["r1"]),
        entry(["read"], ["r2"]),
        entry(["write"], ["r1"]),
    ]


def test_no_collapse_lists_each_distinct_relation_in_field_order() -> None:
    """A declared relation (no run) comes before a run's, an unnamed component before a
    named one, and a relation given twice is listed once."""
    relations = [
        keyed("write", "r1"),
        keyed("read", "r1", "mapper"),
        keyed("read", "r1"),
        keyed("read", None),
        keyed("read", "r1"),
    ]
    assert collapse(relations, set(), str) == [
        entry(["read"], []),
        entry(["read"], ["r1"]),
        entry(["read"], ["r1"], ["mapper"]),
        entry(["write"], ["r1"]),
    ]


def test_collapse_never_merges_different_datasets_or_programs() -> None:
    relations = [
        KeyedRelation("dataset.ns.d1", "job.ns.s1", "read", "r1", ""),
        KeyedRelation("dataset.ns.d2", "job.ns.s1", "read", "r1", ""),
        KeyedRelation("dataset.ns.d1", "job.ns.s2", "read", "r1", ""),
    ]
    assert len(collapse(relations, {"access", "run", "component"}, str)) == 3


def test_collapse_component_and_run_order() -> None:
    relations = [keyed("read", "r1", "mapper"), keyed("read", "r2", "reducer"), keyed("read", None)]
    newest_first = {"r2": 0, "r1": 1}.__getitem__
    assert collapse(relations, {"component", "run"}, newest_first) == [
        entry(["read"], ["r2", "r1"], ["mapper", "reducer"])
    ]
    assert collapse(relations, {"run"}, newest_first) == [
        entry(["read"], []),
        entry(["read"], ["r1"], ["mapper"]),
        entry(["read"], ["r2"], ["reducer"]),
    ]


# -- LineageParams.parse --------------------------------------------------------------------


def test_params_defaults() -> None:
    params = LineageParams.parse(LineageQuery(), max_levels=100, now=NOW)
    assert params == LineageParams(start=NOW - timedelta(days=7), end=NOW)
    assert (params.levels, params.collapse, params.rollup, params.direction) == (
        10,
        frozenset(),
        None,
        "both",
    )


def test_params_parse_every_value() -> None:
    asked = LineageQuery(
        start="now-1d+4h",
        end="2026-11-29T12:00:00Z",
        levels="100",
        collapse=("run", "access,component"),
        rollup="workflow",
        direction="upstream",
    )
    params = LineageParams.parse(asked, max_levels=100, now=NOW)
    assert params == LineageParams(
        start=NOW - timedelta(hours=20),
        end=NOW,
        levels=100,
        collapse=frozenset({"run", "access", "component"}),
        rollup="workflow",
        direction="upstream",
    )


def test_params_default_levels_respect_a_small_cap() -> None:
    assert LineageParams.parse(LineageQuery(), max_levels=3, now=NOW).levels == 3


def test_params_report_every_bad_parameter_by_name() -> None:
    asked = LineageQuery(
        start="soon",
        end="-1",
        levels="6",
        collapse=("program",),
        rollup="app",
        direction="sideways",
    )
    with pytest.raises(InvalidInput) as caught:
        LineageParams.parse(asked, max_levels=5, now=NOW)
    assert [p.path for p in caught.value.problems] == [
        "start",
        "end",
        "levels",
        "collapse",
        "rollup",
        "direction",
    ]


def test_params_reject_an_inverted_window() -> None:
    with pytest.raises(InvalidInput, match=r"start .* is after end"):
        LineageParams.parse(LineageQuery(start="now", end="now-1h"), max_levels=5, now=NOW)


def test_params_built_directly_are_checked_too() -> None:
    with pytest.raises(InvalidInput, match="levels: must be at least 1"):
        LineageParams(start=NOW, end=NOW, levels=0)
    with pytest.raises(InvalidInput, match="start: start must not be after end"):
        LineageParams(start=NOW, end=NOW - timedelta(seconds=1))
