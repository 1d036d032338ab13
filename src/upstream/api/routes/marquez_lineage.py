"""Marquez's lineage, column lineage, search and event endpoints (design §4.4)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from upstream.api.deps import SettingsDep, StoreDep, VisibilityDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import (
    After,
    AsOf,
    Before,
    IncludeDeleted,
    Limit,
    event_window,
    history_window,
)
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.routes.marquez_common import checked_depth, page
from upstream.api.services import read, read_shown
from upstream.model.errors import NotFound
from upstream.query.marquez.answers import (
    ColumnLineageAnswer,
    EventsAnswer,
    LineageEventsAnswer,
    MarquezGraphAnswer,
    SearchAnswer,
)
from upstream.query.marquez.columns import column_lineage
from upstream.query.marquez.common import Page
from upstream.query.marquez.events import lineage_events, recent_events
from upstream.query.marquez.lineage import lineage_graph
from upstream.query.marquez.search import SearchSort, SearchType
from upstream.query.marquez.search import search as search_entities

router = APIRouter(prefix="/api/v1", tags=["marquez"], route_class=EncodedSegmentsRoute)
PageDep = Annotated[Page, Depends(page)]
NodeIdParam = Annotated[
    str,
    Query(
        alias="nodeId",
        # Not min_length: the node-id parser refuses an empty one with its own message.
        json_schema_extra={"minLength": 1},
        description="dataset:<ns>:<name>, datasetField:<ns>:<name>:<field> or job:<ns>:<name>",
        examples=["dataset:food_delivery:public.orders"],
    ),
]
DepthParam = Annotated[int, Query(ge=0, description="How many jobs (fields) deep to go.")]


@router.get(
    "/lineage",
    response_model=None,
    responses={200: {"model": MarquezGraphAnswer}, **documented(NotFound)},
)
def get_lineage(
    node_id: NodeIdParam,
    store: StoreDep,
    settings: SettingsDep,
    visibility: VisibilityDep,
    depth: DepthParam = 20,
    as_of: AsOf = None,
) -> JsonAnswer[MarquezGraphAnswer]:
    """The job<->dataset graph around a dataset or job, cumulative over all runs (all runs
    that had started by `asOf`, with the declarations of then). A token limited to some
    namespaces sees only theirs, with how much the walk stopped at (`hiddenNodes`,
    `hiddenRelations`)."""
    return read_shown(
        store,
        visibility,
        lineage_graph,
        node_id,
        checked_depth(depth, settings),
        settings.max_lineage_nodes,
        history_window(as_of),
        visibility,
    )


@router.get(
    "/column-lineage",
    response_model=None,
    responses={200: {"model": ColumnLineageAnswer}, **documented(NotFound)},
)
def get_column_lineage(
    node_id: NodeIdParam,
    store: StoreDep,
    settings: SettingsDep,
    visibility: VisibilityDep,
    depth: DepthParam = 20,
    with_downstream: Annotated[bool, Query(alias="withDownstream")] = False,
    as_of: AsOf = None,
) -> JsonAnswer[ColumnLineageAnswer]:
    """The field graph upstream of a dataset, field or job (and downstream if asked); with
    `asOf`, as it stood then. A token limited to some namespaces sees only their fields,
    with how much the walk stopped at (`hiddenNodes`, `hiddenRelations`)."""
    return read(
        store,
        column_lineage,
        node_id,
        checked_depth(depth, settings),
        with_downstream,
        settings.max_lineage_nodes,
        history_window(as_of),
        visibility,
    )


@router.get(
    "/search",
    response_model=None,
    responses={200: {"model": SearchAnswer}},
)
def search(
    store: StoreDep,
    visibility: VisibilityDep,
    q: Annotated[str, Query(min_length=1, description="Text the name contains (any case).")],
    filter: Annotated[
        Literal["DATASET", "JOB", "dataset", "job"] | None, Query(description="Only this type.")
    ] = None,
    sort: Annotated[
        Literal["NAME", "UPDATED_AT", "name", "updated_at", "UPDATE_AT", "update_at"],
        Query(description="By name, or newest update first."),
    ] = "NAME",
    limit: Limit = 10,
    namespace: Annotated[
        str | None, Query(min_length=1, description="Only datasets and jobs of this namespace.")
    ] = None,
    deleted: IncludeDeleted = False,
) -> JsonAnswer[SearchAnswer]:
    """Datasets and jobs whose name contains `q`, of the namespaces the token may read."""
    only: SearchType | None = (
        "DATASET" if filter in ("DATASET", "dataset") else "JOB" if filter else None
    )
    order: SearchSort = "NAME" if sort.upper() == "NAME" else "UPDATED_AT"
    return read(
        store,
        search_entities,
        q,
        only=only,
        sort=order,
        limit=limit,
        namespace=namespace,
        include_deleted=deleted,
        visibility=visibility,
    )


@router.get(
    "/events/lineage",
    response_model=None,
    responses={200: {"model": LineageEventsAnswer}},
)
def list_lineage_events(
    store: StoreDep,
    paging: PageDep,
    visibility: VisibilityDep,
    before: Before = None,
    after: After = None,
    sort_direction: Annotated[Literal["asc", "desc"], Query(alias="sortDirection")] = "desc",
) -> JsonAnswer[LineageEventsAnswer]:
    """The events received, verbatim, with `after <= eventTime < before`. A token limited
    to some namespaces is listed (and counted) only the events naming nothing outside
    them."""
    upper, lower = event_window(before, after)
    return read(
        store,
        lineage_events,
        before=upper,
        after=lower,
        direction=sort_direction,
        page=paging,
        visibility=visibility,
    )


@router.get(
    "/events",
    response_model=None,
    responses={200: {"model": EventsAnswer}},
)
def list_events(
    store: StoreDep, paging: PageDep, visibility: VisibilityDep
) -> JsonAnswer[EventsAnswer]:
    """The events received, verbatim, newest first (`marquez-python`'s `list_events()`); a
    token limited to some namespaces is listed only those naming nothing outside them."""
    return read(store, recent_events, paging, visibility=visibility)


@router.get(
    "/events/{namespace:path}",
    response_model=None,
    responses={200: {"model": EventsAnswer}},
)
def list_namespace_events(
    namespace: str, store: StoreDep, paging: PageDep, visibility: VisibilityDep
) -> JsonAnswer[EventsAnswer]:
    """The events whose job, or any of whose datasets, is in the namespace, newest first;
    of a namespace the token may not read, none."""
    return read(store, recent_events, paging, namespace=namespace, visibility=visibility)
