"""`GET /v3/namespaces`, `/v3/datasets/recently-written`, `/v3/jobs/latest-runs` (design §5):
the estate at a glance, each list paged with `limit` and `offset`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from upstream.api.deps import StoreDep, VisibilityDep
from upstream.api.json_answer import JsonAnswer
from upstream.api.routes.marquez_common import page
from upstream.api.services import read
from upstream.query.answers import (
    LatestRunsAnswer,
    NamespaceCountsAnswer,
    WrittenDatasetsAnswer,
)
from upstream.query.estate import latest_runs, namespace_counts, recently_written
from upstream.query.marquez.common import Page

router = APIRouter(tags=["estate"])
PageDep = Annotated[Page, Depends(page)]
BAD_PAGE: dict[int | str, dict[str, Any]] = {400: {"description": "A bad `limit` or `offset`"}}


@router.get(
    "/v3/namespaces",
    summary="Namespaces with how many datasets and jobs each holds",
    response_model=None,
    responses={200: {"model": NamespaceCountsAnswer}, **BAD_PAGE},
)
def get_namespace_counts(
    store: StoreDep, paging: PageDep, visibility: VisibilityDep
) -> JsonAnswer[NamespaceCountsAnswer]:
    """`{"namespaces": [{"name", "datasets", "jobs", "updatedAt"}], "totalCount"}`, by name."""
    return read(store, namespace_counts, paging, visibility)


@router.get(
    "/v3/datasets/recently-written",
    summary="Datasets by when a run last wrote them, newest first",
    response_model=None,
    responses={200: {"model": WrittenDatasetsAnswer}, **BAD_PAGE},
)
def get_recently_written(
    store: StoreDep, paging: PageDep, visibility: VisibilityDep
) -> JsonAnswer[WrittenDatasetsAnswer]:
    """`{"datasets": [{"namespace", "name", "writtenAt"}], "totalCount"}`: the event time of
    each dataset's last recorded write; datasets only ever read are not listed."""
    return read(store, recently_written, paging, visibility)


@router.get(
    "/v3/jobs/latest-runs",
    summary="Each job's latest run, failed ones first",
    response_model=None,
    responses={200: {"model": LatestRunsAnswer}, **BAD_PAGE},
)
def get_latest_runs(
    store: StoreDep, paging: PageDep, visibility: VisibilityDep
) -> JsonAnswer[LatestRunsAnswer]:
    """`{"runs": [{"id", "job", "state", "startedAt", "endedAt"}], "totalCount",
    "failedCount"}`: runs whose state is FAIL or ABORT first, then by start, newest first."""
    return read(store, latest_runs, paging, visibility)
