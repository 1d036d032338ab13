"""rollup=workflow (design §4.2, seed 002): programs inside workflow runs become the workflow."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from upstream.model.workflow import ChainLink
from upstream.query.relations import Relation

WorkflowOf = Callable[[uuid.UUID | None], ChainLink | None]


@dataclass(frozen=True)
class RolledUp:
    """Relations after the rollup, and the jobs that now stand for the runs inside them as
    workflows (rendered `workflow.<ns>.<name>`)."""

    relations: set[Relation]
    workflows: set[uuid.UUID]


def roll_up(
    relations: Iterable[Relation],
    workflow_of: WorkflowOf,
    temporary: Collection[tuple[uuid.UUID, uuid.UUID]],
) -> RolledUp:
    """Replace each relation's job and run by its workflow run's job and run when the run is
    inside a workflow run; drop the relation when its dataset is temporary to that workflow
    run (`temporary` holds such (dataset, workflow run) pairs). Relations outside workflows
    are unchanged."""
    kept: set[Relation] = set()
    workflows: set[uuid.UUID] = set()
    for relation in relations:
        link = workflow_of(relation.run_id)
        if link is None:
            kept.add(relation)
            continue
        if (relation.dataset_id, link.run_id) in temporary:
            continue
        workflows.add(link.job_id)
        kept.add(relation._replace(job_id=link.job_id, run_id=link.run_id))
    return RolledUp(kept, workflows)


def workflow_pairs(
    relations: Iterable[Relation], workflow_of: WorkflowOf
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """The (dataset, workflow run) pairs of `relations`: the candidates for temporaries."""
    pairs: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for relation in relations:
        link = workflow_of(relation.run_id)
        if link is not None:
            pairs.add((relation.dataset_id, link.run_id))
    return pairs
