"""Marquez's lineage, column lineage, search and event endpoints (DESIGN §4.4)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.routes.marquez_common import EncodedSegmentsRoute, checked_depth, page, read
from upstream.query.marquez.columns import column_lineage
from upstream.query.marquez.common import Page
from upstream.query.marquez.events import lineage_events
from upstream.query.marquez.lineage import lineage_graph
from upstream.query.marquez.search import search as search_entities

router = APIRouter(prefix="/api/v1", tags=["marquez"], route_class=EncodedSegmentsRoute)
Doc = dict[str, Any]
NodeIdParam = Annotated[
    str,
    Query(
        alias="nodeId",
        description="dataset:<ns>:<name>, datasetField:<ns>:<name>:<field> or job:<ns>:<name>",
    ),
]
DepthParam = Annotated[int, Query(ge=0, description="How many jobs (fields) deep to go.")]


@router.get("/lineage")
def get_lineage(
    node_id: NodeIdParam, store: StoreDep, settings: SettingsDep, depth: DepthParam = 20
) -> Doc:
    """The job<->dataset graph around a dataset or job, cumulative over all runs."""
    return read(
        store,
        lineage_graph,
        node_id,
        checked_depth(depth, settings),
        settings.max_lineage_nodes,
    )


@router.get("/column-lineage")
def get_column_lineage(
    node_id: NodeIdParam,
    store: StoreDep,
    settings: SettingsDep,
    depth: DepthParam = 20,
    with_downstream: Annotated[bool, Query(alias="withDownstream")] = False,
) -> Doc:
    """The field graph upstream of a dataset, field or job (and downstream if asked)."""
    return read(
        store,
        column_lineage,
        node_id,
        checked_depth(depth, settings),
        with_downstream,
        settings.max_lineage_nodes,
    )


@router.get("/search")
def search(
    store: StoreDep,
    q: Annotated[str, Query(min_length=1, description="Text the name contains (any case).")],
    filter: Annotated[
        Literal["DATASET", "JOB", "dataset", "job"] | None, Query(description="Only this type.")
    ] = None,
    sort: Annotated[
        Literal["NAME", "UPDATED_AT", "name", "updated_at", "UPDATE_AT", "update_at"],
        Query(description="By name, or newest update first."),
    ] = "NAME",
    limit: Annotated[int, Query(ge=1, le=2**63 - 1)] = 10,
    namespace: str | None = None,
) -> Doc:
    """Datasets and jobs whose name contains `q`."""
    only = "DATASET" if filter in ("DATASET", "dataset") else "JOB" if filter else None
    order = "NAME" if sort.upper() == "NAME" else "UPDATED_AT"
    return read(store, search_entities, q, only=only, sort=order, limit=limit, namespace=namespace)


@router.get("/events/lineage")
def list_lineage_events(
    store: StoreDep,
    paging: Annotated[Page, Depends(page)],
    before: datetime | None = None,
    after: datetime | None = None,
    sort_direction: Annotated[Literal["asc", "desc"], Query(alias="sortDirection")] = "desc",
) -> Doc:
    """The events received, verbatim, with `after <= eventTime < before`."""
    return read(
        store, lineage_events, before=before, after=after, direction=sort_direction, page=paging
    )
