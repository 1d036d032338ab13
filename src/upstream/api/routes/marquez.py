"""Marquez's read API for namespaces, sources, datasets, jobs and runs (design §4.4)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import WithJsonSchema

from upstream.api.deps import StoreDep, VisibilityDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import IncludeDeleted
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.routes.marquez_common import page
from upstream.api.services import read_shown
from upstream.model.access import Visibility
from upstream.model.errors import NotFound
from upstream.query.marquez import datasets, jobs, namespaces, runs
from upstream.query.marquez.answers import (
    DatasetAnswer,
    DatasetsAnswer,
    DatasetVersionAnswer,
    DatasetVersionsAnswer,
    JobAnswer,
    JobsAnswer,
    JobVersionAnswer,
    JobVersionsAnswer,
    NamespaceAnswer,
    NamespacesAnswer,
    RunAnswer,
    RunFacetsAnswer,
    RunsAnswer,
    SourceAnswer,
    SourcesAnswer,
)
from upstream.query.marquez.common import Page
from upstream.store.engine import Store

router = APIRouter(prefix="/api/v1", tags=["marquez"], route_class=EncodedSegmentsRoute)
PageDep = Annotated[Page, Depends(page)]
LastRunStates = Annotated[
    list[str] | None,
    Query(
        alias="lastRunStates",
        description="Only jobs whose latest run is in one of these states (repeatable); "
        "jobs without runs are always listed.",
    ),
    WithJsonSchema(
        {"type": "array", "items": {"type": "string", "enum": list(jobs.RUN_STATE_NAMES)}}
    ),
]


@router.get("/namespaces", response_model=None, responses={200: {"model": NamespacesAnswer}})
def list_namespaces(
    store: StoreDep, visibility: VisibilityDep, paging: PageDep, deleted: IncludeDeleted = False
) -> JsonAnswer[NamespacesAnswer]:
    """Every namespace, by name."""
    return read_shown(
        store,
        visibility,
        namespaces.list_namespaces,
        paging,
        include_deleted=deleted,
        visibility=visibility,
    )


@router.get(
    "/namespaces/{namespace}",
    response_model=None,
    responses={200: {"model": NamespaceAnswer}, **documented(NotFound)},
)
def get_namespace(
    namespace: str, store: StoreDep, visibility: VisibilityDep, deleted: IncludeDeleted = False
) -> JsonAnswer[NamespaceAnswer]:
    """One namespace; a name holding `/` is sent percent-encoded (`s3%3A%2F%2Fbucket`)."""
    return read_shown(
        store, visibility, namespaces.get_namespace, namespace, include_deleted=deleted
    )


@router.get(
    "/sources",
    response_model=None,
    responses={200: {"model": SourcesAnswer}},
)
def list_sources(
    store: StoreDep, visibility: VisibilityDep, paging: PageDep
) -> JsonAnswer[SourcesAnswer]:
    """Data sources, from the datasets' `dataSource` facets (else their namespaces)."""
    return read_shown(store, visibility, namespaces.list_sources, paging, visibility)


@router.get(
    "/sources/{source}",
    response_model=None,
    responses={200: {"model": SourceAnswer}, **documented(NotFound)},
)
def get_source(source: str, store: StoreDep, visibility: VisibilityDep) -> JsonAnswer[SourceAnswer]:
    """One data source, by the name its datasets' `dataSource` facet gives."""
    return read_shown(store, visibility, namespaces.get_source, source, visibility)


@router.get(
    "/namespaces/{namespace}/datasets",
    response_model=None,
    responses={200: {"model": DatasetsAnswer}, **documented(NotFound)},
)
def list_datasets(
    namespace: str,
    store: StoreDep,
    visibility: VisibilityDep,
    paging: PageDep,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[DatasetsAnswer]:
    """The namespace's datasets, by name."""
    return read_shown(
        store, visibility, datasets.list_datasets, namespace, paging, include_deleted=deleted
    )


@router.get(
    "/namespaces/{namespace}/datasets/{dataset}",
    response_model=None,
    responses={200: {"model": DatasetAnswer}, **documented(NotFound)},
)
def get_dataset(
    namespace: str,
    dataset: str,
    store: StoreDep,
    visibility: VisibilityDep,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[DatasetAnswer]:
    """One dataset: current fields and facets, tags, current version, last successful write."""
    return read_shown(
        store,
        visibility,
        datasets.get_dataset,
        namespace,
        dataset,
        include_deleted=deleted,
        visibility=visibility,
    )


@router.get(
    "/namespaces/{namespace}/datasets/{dataset}/versions",
    response_model=None,
    responses={200: {"model": DatasetVersionsAnswer}, **documented(NotFound)},
)
def list_dataset_versions(
    namespace: str, dataset: str, store: StoreDep, visibility: VisibilityDep, paging: PageDep
) -> JsonAnswer[DatasetVersionsAnswer]:
    """The dataset as each run wrote it, newest first."""
    return read_shown(
        store, visibility, datasets.list_dataset_versions, namespace, dataset, paging, visibility
    )


@router.get(
    "/namespaces/{namespace}/datasets/{dataset}/versions/{version}",
    response_model=None,
    responses={200: {"model": DatasetVersionAnswer}, **documented(NotFound)},
)
def get_dataset_version(
    namespace: str, dataset: str, version: uuid.UUID, store: StoreDep, visibility: VisibilityDep
) -> JsonAnswer[DatasetVersionAnswer]:
    """The dataset as one run wrote it, with that run."""
    return read_shown(
        store, visibility, datasets.get_dataset_version, namespace, dataset, version, visibility
    )


@router.get(
    "/namespaces/{namespace}/jobs",
    response_model=None,
    responses={200: {"model": JobsAnswer}, **documented(NotFound)},
)
def list_jobs(
    namespace: str,
    store: StoreDep,
    visibility: VisibilityDep,
    paging: PageDep,
    states: LastRunStates = None,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[JobsAnswer]:
    """The namespace's jobs, by name."""
    return _jobs(store, visibility, namespace, paging, states, deleted)


@router.get("/jobs", response_model=None, responses={200: {"model": JobsAnswer}})
def list_all_jobs(
    store: StoreDep,
    visibility: VisibilityDep,
    paging: PageDep,
    states: LastRunStates = None,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[JobsAnswer]:
    """The jobs of every namespace, the most recently updated first."""
    return _jobs(store, visibility, None, paging, states, deleted)


def _jobs(
    store: Store,
    visibility: Visibility,
    namespace: str | None,
    paging: Page,
    states: list[str] | None,
    deleted: bool,
) -> JsonAnswer[JobsAnswer]:
    last_run_states = jobs.run_states(states or ())
    return read_shown(
        store,
        visibility,
        jobs.list_jobs,
        namespace,
        paging,
        last_run_states=last_run_states,
        include_deleted=deleted,
        visibility=visibility,
    )


@router.get(
    "/namespaces/{namespace}/jobs/{job}",
    response_model=None,
    responses={200: {"model": JobAnswer}, **documented(NotFound)},
)
def get_job(
    namespace: str,
    job: str,
    store: StoreDep,
    visibility: VisibilityDep,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[JobAnswer]:
    """One job, with every dataset its runs read and wrote and its latest runs."""
    return read_shown(
        store,
        visibility,
        jobs.get_job,
        namespace,
        job,
        include_deleted=deleted,
        visibility=visibility,
    )


@router.get(
    "/namespaces/{namespace}/jobs/{job}/versions",
    response_model=None,
    responses={200: {"model": JobVersionsAnswer}, **documented(NotFound)},
)
def list_job_versions(
    namespace: str, job: str, store: StoreDep, visibility: VisibilityDep, paging: PageDep
) -> JsonAnswer[JobVersionsAnswer]:
    """The job's versions (distinct inputs and outputs of its runs), newest first."""
    return read_shown(store, visibility, jobs.list_job_versions, namespace, job, paging)


@router.get(
    "/namespaces/{namespace}/jobs/{job}/versions/{version}",
    response_model=None,
    responses={200: {"model": JobVersionAnswer}, **documented(NotFound)},
)
def get_job_version(
    namespace: str, job: str, version: uuid.UUID, store: StoreDep, visibility: VisibilityDep
) -> JsonAnswer[JobVersionAnswer]:
    """One job version, with its newest run."""
    return read_shown(store, visibility, jobs.get_job_version, namespace, job, version)


@router.get(
    "/namespaces/{namespace}/jobs/{job}/runs",
    response_model=None,
    responses={200: {"model": RunsAnswer}, **documented(NotFound)},
)
def list_job_runs(
    namespace: str, job: str, store: StoreDep, visibility: VisibilityDep, paging: PageDep
) -> JsonAnswer[RunsAnswer]:
    """The job's runs, newest first."""
    return read_shown(store, visibility, runs.list_job_runs, namespace, job, paging, visibility)


@router.get(
    "/jobs/runs/{run_id}",
    response_model=None,
    responses={200: {"model": RunAnswer}, **documented(NotFound)},
)
def get_run(run_id: uuid.UUID, store: StoreDep, visibility: VisibilityDep) -> JsonAnswer[RunAnswer]:
    """One run, with the dataset versions it read and wrote. A token limited to some
    namespaces finds a run of a job it may not see missing, and a shown run names nothing
    hidden (no hidden dataset version, parent run or parent job)."""
    return read_shown(store, visibility, runs.get_run, run_id, visibility)


@router.get(
    "/jobs/runs/{run_id}/facets",
    response_model=None,
    responses={200: {"model": RunFacetsAnswer}, **documented(NotFound)},
)
def get_run_facets(
    run_id: uuid.UUID,
    store: StoreDep,
    visibility: VisibilityDep,
    kind: Annotated[
        Literal["run", "job"], Query(alias="type", description="The run's facets or its job's.")
    ] = "run",
) -> JsonAnswer[RunFacetsAnswer]:
    """The facets of a run, or of its job; a run of a job the token may not see is missing,
    and no facet of a shown one names what it may not see."""
    return read_shown(store, visibility, runs.run_facets, run_id, kind, visibility)
