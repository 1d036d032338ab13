"""The flow rules of design §3.2/§3.3/§6 as pure functions, without a database: explicit
dataset edges, precedence per output over the inputs x outputs product, declarations, and
the same flows in every order the facts of a run arrive in."""

from __future__ import annotations

import itertools
import random
import uuid

from upstream.model.flow_rules import Access, DatasetEdge, Flow, OwnerLineage, derive_flows


def uid(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, name)


A, B, C, X, Y = (uid(n) for n in "ABCXY")
JOB, OTHER = uid("job"), uid("other")
RUN = uid("run")


def read(dataset: uuid.UUID, origin: str = "io", job: uuid.UUID = JOB) -> Access:
    return Access(dataset, job, "read", origin)


def write(dataset: uuid.UUID, origin: str = "io", job: uuid.UUID = JOB) -> Access:
    return Access(dataset, job, "write", origin)


def run_lineage(
    *accesses: Access, edges: tuple[DatasetEdge, ...] = (), no_product: bool = False
) -> OwnerLineage:
    return OwnerLineage("run", RUN, RUN, no_product, tuple(accesses), edges)


def pairs(flows: list[Flow]) -> set[tuple[uuid.UUID, uuid.UUID, bool]]:
    return {(f.source, f.target, f.inferred) for f in flows}


def test_the_product_of_inputs_and_outputs_when_nothing_is_explicit() -> None:
    flows = derive_flows(run_lineage(read(A), read(B), write(X), write(Y)))
    assert pairs(flows) == {(A, X, True), (A, Y, True), (B, X, True), (B, Y, True)}
    assert {(f.job_id, f.run_id) for f in flows} == {(JOB, RUN)}


def test_a_dataset_both_read_and_written_does_not_flow_into_itself() -> None:
    assert pairs(derive_flows(run_lineage(read(A), write(A), write(X)))) == {(A, X, True)}


def test_an_explicit_edge_replaces_the_product_for_its_output_only() -> None:
    # X is described by an edge from B (a field edge would do the same: target_dataset=X);
    # Y has no edge, so it still gets the product of every input.
    explicit = DatasetEdge(B, X, JOB, X)
    flows = derive_flows(run_lineage(read(A), read(B), write(X), write(Y), edges=(explicit,)))
    assert pairs(flows) == {(B, X, False), (A, Y, True), (B, Y, True)}


def test_a_field_edge_alone_rules_out_the_product_for_its_output() -> None:
    field_edge = DatasetEdge(None, None, JOB, X)
    implied = DatasetEdge(C, X, JOB, X)
    flows = derive_flows(run_lineage(read(A), write(X), edges=(field_edge, implied)))
    assert pairs(flows) == {(C, X, False)}


def test_a_run_with_a_lineage_facet_gets_no_product() -> None:
    flows = derive_flows(run_lineage(read(A), write(X), write(Y), no_product=True))
    assert flows == []


def test_relations_implied_by_edges_take_no_part_in_the_product() -> None:
    flows = derive_flows(run_lineage(read(A, origin="edge"), read(B), write(X, origin="edge")))
    assert flows == []


def test_a_jobs_declaration_gives_flows_without_a_run() -> None:
    lineage = OwnerLineage("job", JOB, None, False, (read(A), write(X)))
    assert derive_flows(lineage) == [Flow(A, X, JOB, None, True)]
    declared_facet = OwnerLineage("job", JOB, None, True, (read(A), write(X)))
    assert derive_flows(declared_facet) == []


def test_a_datasets_declaration_gives_its_edges_and_never_a_product() -> None:
    lineage = OwnerLineage("dataset", X, None, False, (read(A),), (DatasetEdge(A, X, None, X),))
    assert derive_flows(lineage) == [Flow(A, X, None, None, False)]


def test_the_same_flows_in_every_order_the_facts_arrive() -> None:
    """A run's accesses and edges accumulate from several events; whatever order the store
    read them back in, the flows are the same list (sorted, no duplicates)."""
    facts: list[Access | DatasetEdge] = [
        read(A),
        read(B),
        read(B),  # the same input listed by START and COMPLETE
        write(X),
        write(Y),
        DatasetEdge(A, Y, JOB, Y),
        DatasetEdge(None, None, JOB, Y),
    ]
    expected = [Flow(A, Y, JOB, RUN, False), *sorted_flows({(A, X), (B, X)})]
    expected.sort(key=lambda f: (f.source.int, f.target.int))
    orders = list(itertools.permutations(facts))
    random.Random(14).shuffle(orders)
    for order in orders[:500]:
        accesses = tuple(f for f in order if isinstance(f, Access))
        edges = tuple(f for f in order if isinstance(f, DatasetEdge))
        assert derive_flows(run_lineage(*accesses, edges=edges)) == expected


def sorted_flows(found: set[tuple[uuid.UUID, uuid.UUID]]) -> list[Flow]:
    return [Flow(s, t, JOB, RUN, True) for s, t in found]


def test_reads_and_writes_pair_only_within_one_job() -> None:
    flows = derive_flows(run_lineage(read(A), write(X, job=OTHER)))
    assert flows == []
