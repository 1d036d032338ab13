"""The rules of design §3.2 and §3.3 where they live: `ingest.translate` on single events.

No database and no HTTP: each test builds one event, translates it and compares the facts with
what the design says, worked out by hand. The store's rules across events (precedence across a
run's events, the latest declaration winning) are tested in test_ingest_semantics.py.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any

import pytest

from upstream.ingest.service import translate_document
from upstream.model.errors import InvalidInput
from upstream.model.facets import ColumnLineageFacet, SchemaFacet, parse_facet
from upstream.model.facts import DatasetNode, EdgeFact, EventFacts, JobNode

RUN = "3f5e83fa-3480-44ff-99c5-ff943904e5e8"
PRODUCER = "https://example.com/producer"
RUN_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
JOB_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"
DATASET_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
NS = "postgres://db:5432"


def _dataset(name: str, **facets: Any) -> dict[str, Any]:
    return {"namespace": NS, "name": name, "facets": facets}


def _run_event(
    inputs: list[str],
    outputs: list[dict[str, Any]],
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": "2026-11-30T10:00:00Z",
        "producer": PRODUCER,
        "schemaURL": RUN_URL,
        "run": {"runId": RUN, "facets": {}},
        "job": {"namespace": "etl", "name": "load", "facets": job_facets or {}},
        "inputs": [_dataset(name) for name in inputs],
        "outputs": outputs,
    }


def _lineage_facet(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"lineage": {"_producer": PRODUCER, "_schemaURL": "x", "entries": list(entries)}}


def _source(name: str, field: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "DATASET", "namespace": NS, "name": name}
    if field is not None:
        source["field"] = field
    return source


def _node(node: DatasetNode | JobNode) -> str:
    if isinstance(node, DatasetNode):
        return node.dataset.name + (f".{node.field}" if node.field is not None else "")
    return f"job:{node.job.namespace}/{node.job.name}" + (f"@{node.run_id}" if node.run_id else "")


def _edges(facts: EventFacts) -> set[tuple[str, str, str, bool]]:
    """(origin, source, target, implied) of every edge, fields written `dataset.field`."""
    return {_edge(edge) for edge in facts.edges}


def _edge(edge: EdgeFact) -> tuple[str, str, str, bool]:
    return edge.origin, _node(edge.source), _node(edge.target), edge.implied


def _relations(facts: EventFacts) -> set[tuple[str, str, str]]:
    """(dataset, access, origin) of every relation of the event's own job."""
    return {(r.dataset.name, r.access, r.origin) for r in facts.relations}


def test_lineage_facet_entries_are_the_only_edges() -> None:
    """Two outputs fed by separate inputs: exactly the two stated edges, no product."""
    event = _run_event(
        ["orders", "customers"],
        [_dataset("order_totals"), _dataset("customer_index")],
        _lineage_facet(
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "order_totals",
                "inputs": [_source("orders")],
            },
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "customer_index",
                "inputs": [_source("customers")],
            },
        ),
    )
    facts = translate_document(event)
    assert _edges(facts) == {
        ("lineage_facet", "orders", "order_totals", False),
        ("lineage_facet", "customers", "customer_index", False),
    }
    assert all(e.scope == "run" and e.run_id == uuid.UUID(RUN) for e in facts.edges)


def test_field_entries_give_field_edges_and_the_implied_dataset_edge() -> None:
    """`fields` is field lineage; each source dataset also feeds the target as a whole."""
    event = _run_event(
        ["orders"],
        [_dataset("order_totals")],
        _lineage_facet(
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "order_totals",
                "fields": {"total": {"inputs": [_source("orders", "amount")]}},
            }
        ),
    )
    assert _edges(translate_document(event)) == {
        ("lineage_facet", "orders.amount", "order_totals.total", False),
        ("lineage_facet", "orders", "order_totals", True),
    }


def test_a_dataset_level_input_with_a_field_is_a_dataset_wide_dependency() -> None:
    """A GROUP BY column: the field feeds the whole target, and so does its dataset."""
    event = _run_event(
        ["orders"],
        [_dataset("daily")],
        _lineage_facet(
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "daily",
                "inputs": [_source("orders", "day")],
            }
        ),
    )
    assert _edges(translate_document(event)) == {
        ("lineage_facet", "orders.day", "daily", False),
        ("lineage_facet", "orders", "daily", True),
    }


def test_empty_inputs_say_there_is_no_upstream() -> None:
    """`inputs: []` describes the output (no product with the event's input) and no edge."""
    event = _run_event(
        ["orders"],
        [_dataset("constants")],
        _lineage_facet({"type": "DATASET", "namespace": NS, "name": "constants", "inputs": []}),
    )
    facts = translate_document(event)
    assert facts.edges == []
    assert _relations(facts) == {("orders", "read", "io"), ("constants", "write", "io")}


def test_unnamed_job_references_are_the_own_job_and_its_run() -> None:
    event = _run_event(
        ["orders"],
        [],
        _lineage_facet(
            {"type": "JOB", "inputs": [_source("orders")]},
            {"type": "JOB", "namespace": "etl", "name": "publish", "inputs": [{"type": "JOB"}]},
        ),
    )
    own = f"job:etl/load@{RUN}"
    assert _edges(translate_document(event)) == {
        ("lineage_facet", "orders", own, False),
        ("lineage_facet", own, "job:etl/publish", False),
    }


@pytest.mark.parametrize(
    ("reference", "path"),
    [
        ({"type": "JOB", "namespace": "etl"}, "job.facets.lineage.entries[0]"),
        ({"type": "JOB", "name": "publish"}, "job.facets.lineage.entries[0]"),
    ],
)
def test_half_named_job_references_are_refused_with_their_path(
    reference: dict[str, Any], path: str
) -> None:
    event = _run_event([], [], _lineage_facet({**reference, "inputs": []}))
    with pytest.raises(InvalidInput) as refused:
        translate_document(event)
    assert any(p.path.startswith(path) for p in refused.value.problems), refused.value.problems


def _column_lineage(**fields: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "columnLineage": {
            "_producer": PRODUCER,
            "_schemaURL": "x",
            "fields": {
                target: {
                    "inputFields": [
                        {"namespace": NS, "name": dataset, "field": field}
                        for dataset, field in sources
                    ]
                }
                for target, sources in fields.items()
            },
        }
    }


def test_column_lineage_gives_field_edges_and_reads_of_datasets_the_inputs_omit() -> None:
    """dbt names its sources only in columnLineage: they are read and feed the output."""
    output = _dataset("order_totals", **_column_lineage(total=[("orders", "amount")]))
    facts = translate_document(_run_event([], [output]))
    assert _edges(facts) == {
        ("column_lineage", "orders.amount", "order_totals.total", False),
        ("column_lineage", "orders", "order_totals", True),
    }
    assert _relations(facts) == {("orders", "read", "edge"), ("order_totals", "write", "io")}


def test_the_lineage_facet_wins_over_column_lineage_for_the_same_output() -> None:
    output = _dataset("order_totals", **_column_lineage(total=[("customers", "id")]))
    event = _run_event(
        ["orders"],
        [output],
        _lineage_facet(
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "order_totals",
                "inputs": [_source("orders")],
            }
        ),
    )
    assert _edges(translate_document(event)) == {("lineage_facet", "orders", "order_totals", False)}


def test_column_lineage_still_applies_to_outputs_the_lineage_facet_leaves_out() -> None:
    described = _dataset("order_totals")
    other = _dataset("audit", **_column_lineage(who=[("orders", "user")]))
    event = _run_event(
        ["orders"],
        [described, other],
        _lineage_facet(
            {
                "type": "DATASET",
                "namespace": NS,
                "name": "order_totals",
                "inputs": [_source("orders")],
            }
        ),
    )
    assert _edges(translate_document(event)) == {
        ("lineage_facet", "orders", "order_totals", False),
        ("column_lineage", "orders.user", "audit.who", False),
        ("column_lineage", "orders", "audit", True),
    }


def test_an_event_without_explicit_lineage_states_no_edges() -> None:
    """The inputs x outputs product is the store's rule (flows), not a stated edge."""
    facts = translate_document(_run_event(["a", "b"], [_dataset("c")]), sql_lineage=False)
    assert facts.edges == []
    assert _relations(facts) == {("a", "read", "io"), ("b", "read", "io"), ("c", "write", "io")}


def test_a_job_event_declares_the_jobs_lineage() -> None:
    event = {
        "eventTime": "2026-11-30T10:00:00Z",
        "producer": PRODUCER,
        "schemaURL": JOB_URL,
        "job": {
            "namespace": "etl",
            "name": "load",
            "facets": _lineage_facet(
                {"type": "DATASET", "namespace": NS, "name": "b", "inputs": [_source("a")]}
            ),
        },
        "inputs": [_dataset("a")],
        "outputs": [_dataset("b")],
    }
    facts = translate_document(event)
    assert facts.declaration is not None
    assert (facts.declaration.scope, facts.declaration.has_lineage_facet) == ("job", True)
    assert {(e.scope, e.run_id) for e in facts.edges} == {("job", None)}
    assert _edges(facts) == {("lineage_facet", "a", "b", False)}


def test_a_job_event_with_only_documentation_declares_nothing() -> None:
    event = {
        "eventTime": "2026-11-30T10:00:00Z",
        "producer": PRODUCER,
        "schemaURL": JOB_URL,
        "job": {"namespace": "etl", "name": "load", "facets": {}},
    }
    assert translate_document(event).declaration is None


def test_a_dataset_event_declares_one_targets_lineage() -> None:
    event = {
        "eventTime": "2026-11-30T10:00:00Z",
        "producer": PRODUCER,
        "schemaURL": DATASET_URL,
        "dataset": {
            "namespace": NS,
            "name": "b",
            "facets": {
                "lineage": {"_producer": PRODUCER, "_schemaURL": "x", "inputs": [_source("a")]}
            },
        },
    }
    facts = translate_document(event)
    assert facts.declaration is not None
    assert facts.declaration.scope == "dataset"
    assert _edges(facts) == {("lineage_facet", "a", "b", False)}
    assert {e.scope for e in facts.edges} == {"dataset"}


def test_entry_order_does_not_change_the_edges() -> None:
    """Every order of the same entries (and of their field inputs) states the same edges,
    with the same ids: what the store keeps does not depend on how a producer lists them."""
    entries = [
        {"type": "DATASET", "namespace": NS, "name": "x", "inputs": [_source("a"), _source("b")]},
        {
            "type": "DATASET",
            "namespace": NS,
            "name": "y",
            "fields": {"k": {"inputs": [_source("a", "id"), _source("b", "id")]}},
        },
        {"type": "JOB", "inputs": [_source("c")]},
    ]
    answers = set()
    for order in itertools.permutations(entries):
        facts = translate_document(
            _run_event(["a", "b", "c"], [_dataset("x"), _dataset("y")], _lineage_facet(*order))
        )
        answers.add(frozenset((_edge(e), e.id) for e in facts.edges))
    assert len(answers) == 1
    assert {edge for edge, _ in next(iter(answers))} == {
        ("lineage_facet", "a", "x", False),
        ("lineage_facet", "b", "x", False),
        ("lineage_facet", "a.id", "y.k", False),
        ("lineage_facet", "b.id", "y.k", False),
        ("lineage_facet", "a", "y", True),
        ("lineage_facet", "b", "y", True),
        ("lineage_facet", "c", f"job:etl/load@{RUN}", False),
    }


def test_a_facet_sent_again_is_parsed_once_and_refused_where_it_is_wrong() -> None:
    """Equal content parses to the one (frozen) model; a refusal is never remembered, so
    each event that sends a bad facet is told where in it."""
    facet = {"fields": {"total": {"inputFields": [{"namespace": NS, "name": "o", "field": "a"}]}}}
    first = parse_facet(ColumnLineageFacet, facet, "outputs[0].facets.columnLineage")
    assert parse_facet(ColumnLineageFacet, copy.deepcopy(facet), "outputs[1]") is first
    assert first.fields["total"].inputFields[0].field == "a"
    with pytest.raises(InvalidInput):  # the same content under another model is its own
        parse_facet(SchemaFacet, {"fields": {"total": 1}}, "x")
    bad = {"fields": {"total": {"inputFields": [{"namespace": NS, "name": " ", "field": "a"}]}}}
    for path in ("outputs[0].facets.columnLineage", "outputs[3].facets.columnLineage"):
        with pytest.raises(InvalidInput) as refused:
            parse_facet(ColumnLineageFacet, bad, path)
        assert str(refused.value) == f"{path}.fields.total.inputFields[0].name: must not be blank"
