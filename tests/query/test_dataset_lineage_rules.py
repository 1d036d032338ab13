"""The pure rules behind dataset lineage: workflows, temporaries, rollup, collapse, params."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from upstream.model.errors import InvalidInput
from upstream.model.workflow import is_workflow
from upstream.query.answers import RelationEntry
from upstream.query.collapse import Dimension, KeyedRelation, KeyedRelations, collapse
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.rollup import RollUp
from upstream.query.graph_index.workflows import CREATE, DROP, TEMPORARY, Workflows
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery

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


# -- workflow runs (the index's columns, `graph_index.workflows`) --------------------------

# Jobs: 0 app (a Spark application), 1 task (TASK), 2 dag (DAG), 3 inner (a sub-DAG).
APP_JOB, TASK_JOB, DAG_JOB, INNER_JOB = 0, 1, 2, 3
# Runs: 0 app-run, 1 task-run, 2 dag-run, 3 inner-run, 4 a lone app run, 5 an app run under
# a task run with no workflow above (6), 7 an app run whose parent (8) has no row.
JOB_OF = [APP_JOB, TASK_JOB, DAG_JOB, INNER_JOB, APP_JOB, APP_JOB, TASK_JOB, APP_JOB, NONE]


def workflows(
    parents: list[int],
    marks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
    name_runs: list[int] | None = None,
) -> Workflows:
    """Columns for the runs above (with `parents`), marks (run, dataset, bits) and, per
    dataset, the run its name ends with; each column has its one place more."""
    return Workflows(
        run_job=np.array([*JOB_OF, NONE], dtype=np.int32),
        run_parent=np.array([*parents, NONE], dtype=np.int32),
        run_events=np.ones(len(JOB_OF) + 1, dtype=np.bool_),
        job_workflow=np.array([False, False, True, True, False]),
        mark_run=np.array([m[0] for m in marks], dtype=np.int32),
        mark_dataset=np.array([m[1] for m in marks], dtype=np.int32),
        mark_bits=np.array([m[2] for m in marks], dtype=np.int8),
        name_run=np.array([*(name_runs or [NONE, NONE, NONE]), NONE], dtype=np.int32),
    )


def links(columns: Workflows, *runs: int) -> list[int]:
    return columns.workflow_of(np.array(runs, dtype=np.int64)).tolist()


def test_a_run_without_parent_is_in_no_workflow() -> None:
    assert links(workflows([NONE] * 9), 4) == [NONE]


def test_the_nearest_workflow_ancestor_wins() -> None:
    # app-run -> inner-run -> dag-run
    assert links(workflows([3, NONE, NONE, 2, NONE, NONE, NONE, NONE, NONE]), 0) == [3]


def test_a_leaf_parent_is_skipped_for_the_workflow_above_it() -> None:
    # app-run -> task-run -> dag-run
    assert links(workflows([1, 2, NONE, NONE, NONE, NONE, NONE, NONE, NONE]), 0, 1) == [2, 2]


def test_without_a_workflow_in_the_chain_the_root_is_the_workflow_run() -> None:
    # run 5 -> task run 6, which has no parent
    assert links(workflows([NONE] * 5 + [6, NONE, NONE, NONE]), 5, 6) == [6, NONE]


def test_a_workflow_run_is_its_own_workflow_run() -> None:
    columns = workflows([NONE, NONE, NONE, 2, NONE, NONE, NONE, NONE, NONE])
    assert links(columns, 2, 3) == [2, 3]


def test_a_chain_ends_at_a_parent_without_a_row() -> None:
    """Run 7 names run 8 as parent, which the store never heard of: in no workflow."""
    assert links(workflows([NONE] * 7 + [8, NONE]), 7, NONE) == [NONE, NONE]


def test_members_are_the_runs_below_a_workflow_run_in_the_window() -> None:
    # app-run -> inner-run -> dag-run; task-run -> dag-run
    columns = workflows([3, 2, NONE, 2, NONE, NONE, NONE, NONE, NONE])
    every = np.ones(len(JOB_OF) + 1, dtype=np.bool_)
    dag = np.array([DAG_JOB], dtype=np.int64)
    # The app run belongs to the inner workflow run, not to the DAG's.
    assert columns.members(dag, every).tolist() == [1, 2]
    assert columns.members(np.array([INNER_JOB]), every).tolist() == [0, 3]
    # A DAG run outside the window that had events of its own contains nothing.
    outside = every.copy()
    outside[2] = False
    assert columns.members(dag, outside).tolist() == []


# -- temporary to a workflow run ------------------------------------------------------------

# app-run (0) and task-run (1) inside dag-run (2); the lone app run (4) in none.
INSIDE = [2, 2, NONE, NONE, NONE, NONE, NONE, NONE, NONE]


def temporary(columns: Workflows, dataset: int, workflow_run: int) -> bool:
    pair = (np.array([dataset], dtype=np.int64), np.array([workflow_run], dtype=np.int64))
    return bool(columns.temporary(*pair)[0])


def test_temporary_by_cdap_name_suffix() -> None:
    """Dataset 0's name ends with dag-run's id (2); dataset 1's with another run's."""
    columns = workflows(INSIDE, name_runs=[2, 4, NONE])
    assert temporary(columns, 0, 2)
    assert not temporary(columns, 1, 2)
    assert not temporary(columns, 2, 2)


def test_temporary_by_producer_mark_inside_the_workflow_run() -> None:
    columns = workflows(INSIDE, marks=[(0, 1, TEMPORARY), (4, 2, TEMPORARY)])
    assert temporary(columns, 1, 2)
    # Marked by a run outside the workflow run: temporary to nothing there, but marked.
    assert not temporary(columns, 2, 2)
    assert columns.marked(np.array([0, 1, 2])).tolist() == [False, True, True]


def test_temporary_when_created_and_dropped_inside_the_workflow_run() -> None:
    both = workflows(INSIDE, marks=[(0, 1, CREATE), (1, 1, DROP)])
    assert temporary(both, 1, 2)
    assert not temporary(workflows(INSIDE, marks=[(0, 1, CREATE)]), 1, 2)
    assert not temporary(workflows(INSIDE, marks=[(0, 1, DROP)]), 1, 2)
    # Dropped by a run outside the workflow run: not both inside it.
    assert not temporary(workflows(INSIDE, marks=[(0, 1, CREATE), (4, 1, DROP)]), 1, 2)
    # One relation that kept both states (CREATE on START, DROP on COMPLETE) is enough.
    assert temporary(workflows(INSIDE, marks=[(1, 1, CREATE | DROP)]), 1, 2)


# -- the rollup -----------------------------------------------------------------------------


def test_roll_up_replaces_runs_inside_workflows_and_drops_temporaries() -> None:
    """Rows (dataset, job, run, write, component) of app-run (inside dag-run) become the
    DAG's; the row of dataset 1, temporary to dag-run, goes; the lone run's stays."""
    rollup = RollUp(workflows(INSIDE, marks=[(0, 1, TEMPORARY)]), datasets=3, jobs=4)
    keys = np.array(
        [
            [0, APP_JOB, 0, 1, 0],
            [2, APP_JOB, 0, 0, 1],
            [1, APP_JOB, 0, 1, 0],
            [0, APP_JOB, 4, 1, 0],
            [0, APP_JOB, NONE, 0, 0],
        ],
        dtype=np.int64,
    )
    rolled, levels = rollup.rolled(keys, np.array([1, 1, 2, 1, 3]))
    assert rolled.tolist() == [
        [0, DAG_JOB, 2, 1, 0],
        [2, DAG_JOB, 2, 0, 1],
        [0, APP_JOB, 4, 1, 0],
        [0, APP_JOB, NONE, 0, 0],
    ]
    assert levels.tolist() == [1, 1, 1, 3]
    assert rollup.met(rollup.workflow_level, 1).tolist() == [DAG_JOB]
    assert rollup.met(rollup.temporary_level, 1).tolist() == []
    assert rollup.met(rollup.temporary_level, 2).tolist() == [1]


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


def collapsed(
    relations: list[KeyedRelation],
    dimensions: set[Dimension],
    run_order: Callable[[str], Any] | None = None,
) -> list[RelationEntry]:
    """`collapse` of relations given one by one, runs listed by `run_order` (by id: None)."""
    columns = KeyedRelations.of(relations)
    places = None if run_order is None else columns.run_places(run_order)
    return collapse(columns, dimensions, places)


def test_collapse_run_unions_runs_per_access() -> None:
    assert collapsed(SEED_RELATIONS, {"run"}) == [
        entry(["read"], ["r1", "r2"]),
        entry(["write"], ["r1"]),
    ]


def test_collapse_access_unions_accesses_per_run() -> None:
    assert collapsed(SEED_RELATIONS, {"access"}) == [
        entry(["read"], ["r2"]),
        entry(["read", "write"], ["r1"]),
    ]


def test_collapse_everything_merges_one_dataset_program_pair() -> None:
    assert collapsed(SEED_RELATIONS, {"access", "run", "component"}) == [
        entry(["read", "write"], ["r1", "r2"])
    ]


def test_no_collapse_keeps_each_relation() -> None:
    assert collapsed(SEED_RELATIONS, set()) == [
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
    assert collapsed(relations, set()) == [
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
    assert len(collapsed(relations, {"access", "run", "component"})) == 3


def test_collapse_component_and_run_order() -> None:
    relations = [keyed("read", "r1", "mapper"), keyed("read", "r2", "reducer"), keyed("read", None)]
    newest_first = {"r2": 0, "r1": 1}.__getitem__
    assert collapsed(relations, {"component", "run"}, newest_first) == [
        entry(["read"], ["r2", "r1"], ["mapper", "reducer"])
    ]
    assert collapsed(relations, {"run"}, newest_first) == [
        entry(["read"], []),
        entry(["read"], ["r1"], ["mapper"]),
        entry(["read"], ["r2"], ["reducer"]),
    ]


def test_collapsed_groups_are_ordered_as_their_lists_of_text() -> None:
    """Groups of one dataset, program and access are ordered by their runs before their
    components, each list compared element by element, a shorter prefix first."""
    relations = [
        keyed("read", "r2", "a"),
        keyed("read", "r1", "b"),
        keyed("read", "r1", "c"),
        keyed("read", "r3", "c"),
    ]
    assert collapsed(relations, {"run"}) == [
        entry(["read"], ["r1"], ["b"]),
        entry(["read"], ["r1", "r3"], ["c"]),
        entry(["read"], ["r2"], ["a"]),
    ]
    newest = {"r3": 0, "r2": 1, "r1": 2}.__getitem__
    assert collapsed(relations, {"run"}, newest) == [
        entry(["read"], ["r1"], ["b"]),
        entry(["read"], ["r2"], ["a"]),
        entry(["read"], ["r3", "r1"], ["c"]),
    ]


def plainly_collapsed(
    relations: list[KeyedRelation], dimensions: set[Dimension], run_order: Callable[[str], Any]
) -> list[dict[str, Any]]:
    """design §4.2's collapse written out on the relations' texts: group by what is not
    collapsed, union the rest, sort every list and then the groups as lists of text."""
    groups: dict[tuple[str, ...], list[KeyedRelation]] = {}
    for r in relations:
        key = (
            r.data,
            r.program,
            "" if "access" in dimensions else r.access,
            "" if "run" in dimensions else r.run or "",
            "" if "component" in dimensions else r.component,
        )
        groups.setdefault(key, []).append(r)
    found = [
        {
            "data": key[0],
            "program": key[1],
            "accesses": sorted({r.access for r in group}),
            "runs": sorted({r.run for r in group if r.run is not None}, key=run_order),
            "components": sorted({r.component for r in group if r.component}),
        }
        for key, group in groups.items()
    ]
    found.sort(key=lambda g: (g["data"], g["program"], g["accesses"], g["runs"], g["components"]))
    return found


@settings(max_examples=300, deadline=None)
@given(
    relations=st.lists(
        st.builds(
            KeyedRelation,
            st.sampled_from(["dataset.n.b", "dataset.n.a", "dataset.m.é"]),
            st.sampled_from(["job.n.j", "workflow.n.w"]),
            st.sampled_from(["read", "write"]),
            st.sampled_from([None, "r3", "r1", "r2", "r10"]),
            st.sampled_from(["", "mapper", "Reducer", "z"]),
        ),
        max_size=25,
    ),
    dimensions=st.sets(st.sampled_from(["access", "run", "component"])),
    by_start=st.booleans(),
)
def test_collapse_on_columns_equals_the_rule_written_out(
    relations: list[KeyedRelation], dimensions: set[Dimension], by_start: bool
) -> None:
    """Grouping and ordering on integer codes gives exactly the answer the rule gives on
    the relations' texts, for every choice of dimensions and both run orders."""
    newest = {"r2": 0, "r10": 1, "r3": 2, "r1": 3}.__getitem__ if by_start else None
    expected = plainly_collapsed(relations, dimensions, newest or str)
    assert collapsed(relations, dimensions, newest) == expected


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
