"""What only Marquez's own web UI asks: the dashboard's counts (`/api/v1/stats/...`) and the
advanced search (`/api/v2beta/search/...`), answered from Upstream's store and search. A
token limited to some namespaces is counted and found only what it may read."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from upstream.api.deps import NowDep, StoreDep, VisibilityDep
from upstream.api.json_answer import JsonAnswer
from upstream.api.services import read, read_shown
from upstream.query.marquez import search, stats
from upstream.query.marquez.answers import IntervalCount, LineageEventCounts, OpenSearchAnswer

router = APIRouter(tags=["marquez"])

PeriodParam = Annotated[
    stats.Period,
    Query(description="DAY: the last 24 hours, by hour; WEEK: the last 7 days, by day."),
]
TimeZone = Annotated[
    str | None,
    Query(
        description="The IANA time zone whose hours and days the intervals are "
        "(e.g. Europe/Berlin); required for WEEK, UTC by default for DAY."
    ),
]
SearchText = Annotated[str, Query(min_length=1, description="Text the name contains (any case).")]


@router.get(
    "/api/v1/stats/lineage-events",
    response_model=None,
    responses={200: {"model": list[LineageEventCounts]}},
)
def lineage_event_stats(
    store: StoreDep,
    now: NowDep,
    visibility: VisibilityDep,
    period: PeriodParam,
    timezone: TimeZone = None,
) -> JsonAnswer[list[LineageEventCounts]]:
    """Run events per interval, by type (START, COMPLETE, FAIL, ABORT): those the token may
    read whole, as `/api/v1/events/lineage` lists them."""
    return read(store, stats.lineage_event_counts, period, timezone, now, visibility)


@router.get(
    "/api/v1/stats/{asset}",
    response_model=None,
    responses={200: {"model": list[IntervalCount]}},
)
def asset_stats(
    asset: stats.Asset,
    store: StoreDep,
    now: NowDep,
    visibility: VisibilityDep,
    period: PeriodParam,
    timezone: TimeZone = None,
) -> JsonAnswer[list[IntervalCount]]:
    """How many jobs, datasets or sources there were at the end of each interval, of the
    namespaces the token may read (sources: those their datasets name)."""
    return read(store, stats.asset_counts, asset, period, timezone, now, visibility)


@router.get(
    "/api/v2beta/search/jobs", response_model=None, responses={200: {"model": OpenSearchAnswer}}
)
def search_jobs(
    store: StoreDep, visibility: VisibilityDep, q: SearchText
) -> JsonAnswer[OpenSearchAnswer]:
    """Jobs whose name contains `q`, with their latest run; of the namespaces the token may
    read, their facets naming nothing it may not."""
    return read_shown(store, visibility, search.search_jobs_hits, q, visibility)


@router.get(
    "/api/v2beta/search/datasets",
    response_model=None,
    responses={200: {"model": OpenSearchAnswer}},
)
def search_datasets(
    store: StoreDep, visibility: VisibilityDep, q: SearchText
) -> JsonAnswer[OpenSearchAnswer]:
    """Datasets whose name contains `q`, with the latest run that read or wrote them; of
    the namespaces the token may read, the latest run being one of a job it may read."""
    return read_shown(store, visibility, search.search_datasets_hits, q, visibility)
