"""The workflow rules of design §3.4, as pure functions over what the store knows.

A workflow is a job that contains other jobs' runs; rolling lineage up to workflows replaces
each run inside a workflow run by that workflow run, and hides the datasets that exist only
inside it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: jobType values that name a container of other jobs.
WORKFLOW_JOB_TYPES = frozenset({"DAG", "WORKFLOW"})
#: jobType values of a single step: such a job stays a job even when it is another run's
#: parent (an Airflow TASK that started a Spark application; a dbt MODEL; a Spark SQL_JOB).
LEAF_JOB_TYPES = frozenset(
    {"TASK", "QUERY", "COMMAND", "MODEL", "SNAPSHOT", "SEED", "TEST", "SQL_JOB", "RDD_JOB"}
)


def is_workflow(job_type: str | None, seen_as_parent: bool) -> bool:
    """A job is a workflow when its jobType says so (DAG, WORKFLOW), or when it was named as
    the parent of another run and its jobType is not a leaf type such as TASK."""
    kind = (job_type or "").upper()
    if kind in WORKFLOW_JOB_TYPES:
        return True
    return seen_as_parent and kind not in LEAF_JOB_TYPES


@dataclass(frozen=True)
class ChainLink:
    """One run of a parent chain, with whether its job is a workflow."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    job_is_workflow: bool


def workflow_run(chain: Sequence[ChainLink]) -> ChainLink | None:
    """The workflow run of `chain[0]`, given its chain up to the root (`chain[1]` is its
    parent, `chain[-1]` the root): the nearest run of the chain, the run itself included,
    whose job is a workflow; else the root when the run has a parent; else None (the run is
    in no workflow)."""
    for link in chain:
        if link.job_is_workflow:
            return link
    return chain[-1] if len(chain) > 1 else None


@dataclass(frozen=True)
class TemporaryMark:
    """What one relation of a run inside a workflow run says about a dataset's life."""

    temporary: bool
    #: Every lifecycleStateChange the run reported for the dataset (CREATE, DROP…).
    lifecycles: tuple[str, ...] = ()

    @property
    def creates_or_drops(self) -> bool:
        return any(state.upper() in _CREATE_DROP for state in self.lifecycles)


_CREATE_DROP = frozenset({"CREATE", "DROP"})
#: `datasetType` values of data that exists only to pass from one job to the next.
TEMPORARY_DATASET_TYPES = frozenset({"JOB_OUTPUT"})
#: `datasetType` subtypes that say the dataset does not outlive its workflow run.
TEMPORARY_DATASET_SUBTYPES = frozenset({"TEMPORARY"})


def temporary_by_type(dataset_type: str, sub_type: str | None) -> bool:
    """Whether OpenLineage's `datasetType` facet marks a dataset temporary, as the recorder's
    `temporary=True` does: subtype TEMPORARY, or type JOB_OUTPUT (data one job hands to the
    next, which the spec says consumers may choose not to show). Case is ignored."""
    return (
        dataset_type.strip().upper() in TEMPORARY_DATASET_TYPES
        or (sub_type or "").strip().upper() in TEMPORARY_DATASET_SUBTYPES
    )


def is_temporary_to(
    dataset_name: str, workflow_run_id: uuid.UUID, marks: Iterable[TemporaryMark]
) -> bool:
    """A dataset is temporary to a workflow run when a run inside it marked the dataset
    temporary, when runs inside it both CREATE and DROP it, or when the dataset's name ends
    with the workflow run's id (CDAP's convention). `marks` are the dataset's relations from
    runs inside that workflow run."""
    if dataset_name.lower().endswith(str(workflow_run_id).lower()):
        return True
    lifecycles: set[str] = set()
    for mark in marks:
        if mark.temporary:
            return True
        lifecycles.update(state.upper() for state in mark.lifecycles)
    return lifecycles >= _CREATE_DROP
