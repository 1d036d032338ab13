"""Dataset-to-dataset data flow, the one place where precedence becomes a graph (design §3.2,
§3.3, §6).

A flow S -> T exists in run r of job J when r stored an explicit dataset-level edge S -> T (a
lineage facet entry, field operations, columnLineage, or one implied by field edges), or, when
nothing explicit describes T for that run, when r read S and wrote T (the inputs x outputs
product). The product is never made for a run that carried a lineage facet, nor for a job
whose declaration carried one. A JobEvent's declaration follows the same rules with no run.

The rules run when an event is written, over everything its run (or declaration) has stored
so far, so the flows a run ends with do not depend on the order its events arrived in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

#: Who a group of flows belongs to: re-deriving an owner replaces all of its flows.
OwnerScope = Literal["run", "job", "dataset"]


class Flow(NamedTuple):
    """Data of `source` flowed into `target`, made by `job_id` in `run_id` (None: declared).

    A named tuple: walks make thousands of them, and a frozen dataclass cost several times
    as much to build."""

    source: uuid.UUID
    target: uuid.UUID
    job_id: uuid.UUID | None
    run_id: uuid.UUID | None
    inferred: bool


class Access(NamedTuple):
    """One stored access relation as the rules need it (origin "io": listed by the event)."""

    dataset_id: uuid.UUID
    job_id: uuid.UUID
    access: str
    origin: str


class DatasetEdge(NamedTuple):
    """One stored edge: dataset ends only when `source`/`target` are set and no field is
    named; `target_dataset` is the output an edge of any kind describes (None for a job)."""

    source: uuid.UUID | None
    target: uuid.UUID | None
    job_id: uuid.UUID | None
    target_dataset: uuid.UUID | None


@dataclass(frozen=True)
class OwnerLineage:
    """Everything one run (or one job's or dataset's declaration) has stored: its access
    relations and its edges, and whether the product is ruled out for it as a whole."""

    scope: OwnerScope
    owner_id: uuid.UUID
    run_id: uuid.UUID | None
    no_product: bool
    accesses: tuple[Access, ...] = ()
    edges: tuple[DatasetEdge, ...] = field(default=())


def derive_flows(lineage: OwnerLineage) -> list[Flow]:
    """The flows of one owner, sorted: explicit dataset-level edges, then the inputs x
    outputs product for each output that no edge describes (design §3.2's precedence)."""
    found: set[Flow] = set()
    described: set[uuid.UUID] = set()
    for edge in lineage.edges:
        if edge.target_dataset is not None:
            described.add(edge.target_dataset)
        if edge.source is not None and edge.target is not None:
            found.add(Flow(edge.source, edge.target, edge.job_id, lineage.run_id, False))
    if lineage.scope != "dataset" and not lineage.no_product:
        found |= _product(lineage.accesses, described, lineage.run_id)
    return sorted(found, key=flow_order)


def _product(
    accesses: Iterable[Access], described: set[uuid.UUID], run_id: uuid.UUID | None
) -> set[Flow]:
    """Every listed input to every listed output of the same job, but not a dataset to
    itself, and not into an output an edge already describes."""
    reads: dict[uuid.UUID, set[uuid.UUID]] = {}
    writes: dict[uuid.UUID, set[uuid.UUID]] = {}
    for access in accesses:
        if access.origin != "io":
            continue
        side = reads if access.access == "read" else writes
        side.setdefault(access.job_id, set()).add(access.dataset_id)
    return {
        Flow(source, target, job_id, run_id, True)
        for job_id, targets in writes.items()
        for target in targets - described
        for source in reads.get(job_id, set())
        if source != target
    }


def flow_order(flow: Flow) -> tuple[int, int, int, int]:
    """(source, target, job, run) on the ids' integers: comparing UUID objects field by
    field cost more than the statements on large frontiers. Declared flows (no run) come
    before run flows instead of failing to compare."""
    return (
        flow.source.int,
        flow.target.int,
        flow.job_id.int if flow.job_id else -1,
        flow.run_id.int if flow.run_id else -1,
    )
