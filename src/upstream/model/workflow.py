"""The workflow rules of design §3.4 that read one row: whether a job is a workflow, and
whether a `datasetType` facet marks a dataset temporary.

A workflow is a job that contains other jobs' runs; rolling lineage up to workflows replaces
each run inside a workflow run by that workflow run, and hides the datasets that exist only
inside it. Which workflow run a run belongs to, and which datasets are temporary to it, are
rules over whole parent chains, kept with the graph index (`query.graph_index.workflows`).
"""

from __future__ import annotations

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
