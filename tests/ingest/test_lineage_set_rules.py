"""The rules of lineage sets (design §6), without a database: what a set holds, its content
hash, the order of its edges, and what a later statement does to the set an owner links to."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.json_values import json_values
from upstream.model.facts import DatasetNode, EdgeFact, JobNode, Origin
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.lineage_sets import (
    LinkKey,
    SetEdge,
    change,
    group_edges,
    lineage_set,
    merged,
    set_edge,
)

SRC, OUT = DatasetRef("w", "src"), DatasetRef("w", "out")
JOB = JobRef("etl", "load")
RUN_A, RUN_B = uuid.UUID(int=1), uuid.UUID(int=2)


def field_edge(
    source: str, target: str, origin: Origin = "column_lineage", run: uuid.UUID = RUN_A
) -> EdgeFact:
    return EdgeFact(
        scope="run",
        origin=origin,
        source=DatasetNode(SRC, source),
        target=DatasetNode(OUT, target),
        run_id=run,
        job=JOB,
    )


def key(run: uuid.UUID = RUN_A) -> LinkKey:
    return LinkKey("run", run, OUT.id)


def test_a_set_is_the_same_whatever_order_its_edges_came_in() -> None:
    edges = [set_edge(field_edge(s, t)) for s, t in [("a", "x"), ("b", "y"), ("c", "z")]]
    first = lineage_set(edges, precedence=True)
    for seed in range(5):
        shuffled = edges[:]
        random.Random(seed).shuffle(shuffled)
        again = lineage_set(shuffled, precedence=True)
        assert again == first
        assert again.id == first.id
    assert [(e.source_field, e.target_field) for e in first.edges] == [
        ("a", "x"),
        ("b", "y"),
        ("c", "z"),
    ]


def test_runs_that_state_the_same_edges_share_one_set() -> None:
    groups = group_edges(
        [field_edge("a", "x", run=run) for run in (RUN_A, RUN_B)]
        + [field_edge("b", "y", run=run) for run in (RUN_A, RUN_B)]
    )
    assert list(groups) == [key(RUN_A), key(RUN_B)]
    sets = {lineage_set(g.edges, precedence=True).id for g in groups.values()}
    assert len(sets) == 1
    assert {g.run_id for g in groups.values()} == {RUN_A, RUN_B}
    assert {g.job_id for g in groups.values()} == {JOB.id}


def test_different_content_makes_a_different_set() -> None:
    one = lineage_set([set_edge(field_edge("a", "x"))], precedence=True)
    other = lineage_set([set_edge(field_edge("a", "y"))], precedence=True)
    with_transformation = EdgeFact(
        scope="run",
        origin="column_lineage",
        source=DatasetNode(SRC, "a"),
        target=DatasetNode(OUT, "x"),
        run_id=RUN_A,
        job=JOB,
        transformations=[{"type": "DIRECT"}],
    )
    third = lineage_set([set_edge(with_transformation)], precedence=True)
    assert len({one.id, other.id, third.id}) == 3
    assert len({one.checksum, other.checksum, third.checksum}) == 3


def test_only_the_highest_rank_stands_per_run_and_output() -> None:
    stated = [
        set_edge(field_edge("a", "x", "sql")),
        set_edge(field_edge("b", "y", "column_lineage")),
        set_edge(field_edge("c", "z", "lineage_facet")),
        set_edge(field_edge("d", "w", "field_operations")),
    ]
    kept = lineage_set(stated, precedence=True)
    assert {e.origin for e in kept.edges} == {"lineage_facet", "field_operations"}
    assert kept.rank == 3
    # Without precedence (a declaration, or edges into a job) every edge stays.
    assert len(lineage_set(stated, precedence=False).edges) == 4


def test_the_first_of_two_edges_with_the_same_ends_stays() -> None:
    facet = set_edge(field_edge("a", "x", "lineage_facet"))
    operations = set_edge(field_edge("a", "x", "field_operations"))
    assert lineage_set([facet, operations], precedence=True).edges == (facet,)
    assert lineage_set([operations, facet], precedence=True).edges == (operations,)


def test_what_a_later_statement_does_to_the_stored_set() -> None:
    column = lineage_set([set_edge(field_edge("a", "x"))], precedence=True)
    facet = lineage_set([set_edge(field_edge("a", "x", "lineage_facet"))], precedence=True)
    sql = lineage_set([set_edge(field_edge("a", "x", "sql"))], precedence=True)
    more = lineage_set([set_edge(field_edge("b", "y"))], precedence=True)
    assert change(None, 0, column, key()) == "replace"
    assert change(column.id, 2, column, key()) == "none"
    assert change(column.id, 2, facet, key()) == "replace"
    assert change(column.id, 2, sql, key()) == "none"
    assert change(column.id, 2, more, key()) == "merge"
    declared = LinkKey("job", JOB.id, OUT.id)
    assert change(column.id, 2, sql, declared) == "merge"


def test_a_merge_keeps_the_stored_edges_and_adds_the_new_ones() -> None:
    stored = lineage_set([set_edge(field_edge("a", "x"))], precedence=True)
    resent = lineage_set(
        [set_edge(field_edge("a", "x")), set_edge(field_edge("b", "y"))], precedence=True
    )
    union = merged(stored.edges, resent, key())
    assert [(e.source_field, e.target_field) for e in union.edges] == [("a", "x"), ("b", "y")]
    assert union.id == resent.id  # the same content, whichever event brought it first


def test_edges_into_a_job_have_no_output_and_no_precedence() -> None:
    into_job = EdgeFact(
        scope="run",
        origin="lineage_facet",
        source=DatasetNode(SRC),
        target=JobNode(JOB, RUN_A),
        run_id=RUN_A,
        job=JOB,
    )
    [(link, stated)] = group_edges([into_job]).items()
    assert link == LinkKey("run", RUN_A, None)
    assert not link.precedence
    assert stated.edges[0].target_job_id == JOB.id
    assert stated.edges[0].target_run_id == RUN_A


IDS = st.none() | st.integers(0, 2**128 - 1).map(lambda n: uuid.UUID(int=n))


@given(
    st.sampled_from(["column_lineage", "sql", "lineage_facet"]),
    st.booleans(),
    st.tuples(st.text(), IDS, st.none() | st.text(), IDS, IDS),
    st.tuples(st.text(), IDS, st.none() | st.text(), IDS, IDS),
    st.lists(st.dictionaries(st.text(), json_values()), max_size=3),
)
def test_an_edges_canonical_text_is_the_standard_librarys(
    origin: str, implied: bool, source: tuple[Any, ...], target: tuple[Any, ...], how: Any
) -> None:
    # A set's checksum (its id) is hashed from these texts: they must never change.
    edge = SetEdge(origin, implied, *source, *target, how)
    values = [str(v) if isinstance(v, uuid.UUID) else v for v in edge]
    standard = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert edge.canonical() == standard
