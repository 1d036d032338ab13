"""A collapsed answer's relations written as JSON text at once (`query.collapsed_entries`):
the same bytes as the entries `collapse` gives, written by orjson, with no entry made."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import BASE_TIME, ds, run_event
from tests.conftest import post
from tests.query.test_dataset_lineage import NS, get
from tests.query.test_listed_entries import RUNS as LISTED_RUNS
from tests.query.test_listed_entries import keyed_relations
from upstream.query import lineage_render
from upstream.query.collapse import Dimension, KeyedRelation, KeyedRelations, collapse
from upstream.query.collapsed_entries import collapsed_entries
from upstream.query.graph_index.numbering import Numbering
from upstream.query.id_parts import id_parts

RUNS = [*LISTED_RUNS, 'r","4']
#: Run ids of the test over HTTP: the text of A sorts before B's, B's before C's.
RUN_A = "00000000-0000-4000-8000-00000000000a"
RUN_B = "00000000-0000-4000-8000-00000000000b"
RUN_C = "00000000-0000-4000-8000-00000000000c"


@settings(max_examples=400, deadline=None)
@given(
    relations=keyed_relations(RUNS),
    dimensions=st.sets(st.sampled_from(["access", "run", "component"]), min_size=1),
    by_start=st.booleans(),
)
def test_collapsed_entries_are_the_text_of_the_collapsed_answer(
    relations: list[KeyedRelation], dimensions: set[Dimension], by_start: bool
) -> None:
    """For every choice of dimensions and both run orders (a list whose runs are tied up to
    one another's ends, a group whose lists are empty, ids that JSON escapes)."""
    keyed = KeyedRelations.of(relations)
    newest = {None: -1, 'r","4': 0, "r2": 1, "r10": 2, "r3": 3, "r1": 4}.__getitem__
    order = keyed.run_places(newest) if by_start else None
    written = collapsed_entries(keyed, dimensions, order)
    entries = collapse(keyed, dimensions, order)
    assert written.text == orjson.dumps(entries)
    assert len(written) == len(entries)
    # The runs' text kept by their numbers (`id_parts`) writes the same bytes.
    numbering = Numbering()
    numbers = numbering.numbers(keyed.run_ids).astype(np.int64)
    kept = replace(keyed, run_parts=id_parts(numbering, numbers))
    assert collapsed_entries(kept, dimensions, order).text == written.text


@settings(max_examples=300, deadline=None)
@given(relations=keyed_relations(RUNS, components=[""]), by_start=st.booleans())
def test_collapsed_by_run_alone_is_the_text_of_the_collapsed_answer(
    relations: list[KeyedRelation], by_start: bool
) -> None:
    """Collapsed by run with no component named, the answer is written by one sort
    (`collapsed_entries._collapsed_by_run`): the same bytes, groups of declared relations
    alone listing no run."""
    keyed = KeyedRelations.of(relations)
    newest = {None: -1, 'r","4': 0, "r2": 1, "r10": 2, "r3": 3, "r1": 4}.__getitem__
    order = keyed.run_places(newest) if by_start else None
    written = collapsed_entries(keyed, {"run"}, order)
    entries = collapse(keyed, {"run"}, order)
    assert written.text == orjson.dumps(entries)
    assert len(written) == len(entries)
    numbering = Numbering()
    numbers = numbering.numbers(keyed.run_ids).astype(np.int64)
    kept = replace(keyed, run_parts=id_parts(numbering, numbers))
    assert collapsed_entries(kept, {"run"}, order).text == written.text


def keyed(data: str, access: str, run: str | None, component: str = "") -> KeyedRelation:
    return KeyedRelation(data, "job.n.j", access, run, component)


def test_collapsed_entries_written_out() -> None:
    """Runs united per access, newest first, a declared relation's none; components per
    group; groups by dataset, then access."""
    relations = KeyedRelations.of(
        [
            keyed("dataset.n.b", "read", "r1", "mapper"),
            keyed("dataset.n.a", "write", "r2"),
            keyed("dataset.n.a", "write", "r1"),
            keyed("dataset.n.a", "read", None),
            keyed("dataset.n.b", "read", "r2", "reducer"),
        ]
    )
    newest = relations.run_places({"r2": 0, "r1": 1}.__getitem__)
    head = b'{"data":"dataset.n.%s","program":"job.n.j","accesses":["%s"],'
    assert collapsed_entries(relations, {"run", "component"}, newest).text == b"".join(
        [
            b"[",
            head % (b"a", b"read") + b'"runs":[],"components":[]},',
            head % (b"a", b"write") + b'"runs":["r2","r1"],"components":[]},',
            head % (b"b", b"read") + b'"runs":["r2","r1"],"components":["mapper","reducer"]}',
            b"]",
        ]
    )
    by_id = collapsed_entries(relations, {"run"}, None)
    assert orjson.loads(by_id.text)[2:] == [
        {
            "data": "dataset.n.b",
            "program": "job.n.j",
            "accesses": ["read"],
            "runs": [run],
            "components": [component],
        }
        for run, component in (("r1", "mapper"), ("r2", "reducer"))
    ]
    assert len(by_id) == 4


def test_no_relation_is_an_empty_list() -> None:
    written = collapsed_entries(KeyedRelations.of([]), {"run"}, None)
    assert (written.text, len(written)) == (b"[]", 0)


def test_a_collapsed_answer_over_http_makes_no_entry(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route's collapsed answer is written from the relations' columns, its runs newest
    first and those started at the same time by id."""
    later = BASE_TIME + timedelta(hours=1)
    post(
        client,
        run_event((NS, "P"), run_id=RUN_B, inputs=[ds(NS, "S")], outputs=[ds(NS, "T")]),
        run_event((NS, "P"), run_id=RUN_C, time=later, inputs=[ds(NS, "S")]),
        run_event((NS, "P"), run_id=RUN_A, inputs=[ds(NS, "S")], outputs=[ds(NS, "T")]),
    )
    made: list[Any] = []

    def counted(*args: Any) -> Any:
        made.append(args)
        return collapse(*args)

    monkeypatch.setattr(lineage_render, "collapse", counted)
    response = get(client, "S", direction="downstream", collapse="run")
    assert response.status_code == 200, response.text
    assert made == []
    assert [(r["data"], r["accesses"], r["runs"]) for r in response.json()["relations"]] == [
        ("dataset.ns.S", ["read"], [RUN_C, RUN_A, RUN_B]),
        ("dataset.ns.T", ["write"], [RUN_A, RUN_B]),
    ]


def test_a_kept_program_text_follows_a_job_becoming_a_workflow(client: TestClient) -> None:
    """A program's text is kept by its number and kind, not its kind by its number: once a
    run inside one of its runs makes the job a workflow, the next answer shows it as one."""
    post(client, run_event((NS, "P"), run_id=RUN_A, inputs=[ds(NS, "S")], outputs=[ds(NS, "T")]))
    before = get(client, "S", direction="downstream", collapse="run").json()
    assert list(before["programs"]) == ["job.ns.P"]
    inside = run_event((NS, "Q"), run_id=RUN_B, inputs=[ds(NS, "U")], parent=((NS, "P"), RUN_A))
    post(client, inside)
    after = get(client, "S", direction="downstream", collapse="run").json()
    assert list(after["programs"]) == ["workflow.ns.P"]
    assert [r["program"] for r in after["relations"]] == ["workflow.ns.P"] * 2
