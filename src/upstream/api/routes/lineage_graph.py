"""`GET /v3/lineage/graph`: the whole dataset-level lineage graph (what `upstream export`
draws), cut at the lineage node cap."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from upstream.api.deps import SettingsDep, StoreDep, VisibilityDep
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import AsOf, history_window
from upstream.api.services import read
from upstream.model.errors import InvalidParameter
from upstream.model.hierarchy import parse_group_key
from upstream.query.answers import GraphAnswer, HierarchyMapAnswer
from upstream.query.hierarchy_map import hierarchy_map
from upstream.query.whole_graph import lineage_graph

router = APIRouter(tags=["dataset lineage"])


@router.get(
    "/v3/lineage/graph",
    summary="Every dataset and the data flows between them, or the datasets grouped by container",
    response_model=None,
    responses={
        200: {"model": GraphAnswer | HierarchyMapAnswer},
        400: {"description": "A bad parameter; the message names it"},
    },
)
def get_lineage_graph(
    store: StoreDep,
    settings: SettingsDep,
    visibility: VisibilityDep,
    as_of: AsOf = None,
    rollup: Annotated[
        Literal["hierarchy"] | None,
        Query(description="hierarchy: group the datasets by their container at `level`"),
    ] = None,
    level: Annotated[
        int | None,
        Query(
            ge=1,
            description="With rollup=hierarchy: 1 groups by namespace, 2 by the next "
            "container (database, bucket folder…), and so on",
        ),
    ] = None,
    within: Annotated[
        str | None,
        Query(
            description="With rollup=hierarchy: only the datasets inside this group (its "
            "`key` in an earlier answer), to drill down"
        ),
    ] = None,
) -> JsonAnswer[GraphAnswer] | JsonAnswer[HierarchyMapAnswer]:
    """Datasets, the jobs that move data, the flows (source, target, job, runs, inferred) and
    the explicit edges that touch a job; `"truncated": true` past `max_lineage_nodes`. With
    `asOf`, the runs that had started by then and the declarations of then. With
    rollup=hierarchy&level=N, the datasets grouped by their level-N container instead, with
    the flows between groups. A token limited to some namespaces sees only theirs, and how
    many hidden nodes and flows the shown ones met (`hiddenNodes`, `hiddenRelations`)."""
    window = history_window(as_of)
    if rollup is None:
        for name, value in (("level", level), ("within", within)):
            if value is not None:
                raise InvalidParameter.at(name, "only applies with rollup=hierarchy")
        return read(
            store,
            lineage_graph,
            max_nodes=settings.max_lineage_nodes,
            window=window,
            visibility=visibility,
        )
    if level is None:
        raise InvalidParameter.at("level", "rollup=hierarchy needs a level (1: namespaces)")
    inside = parse_group_key(within) if within else ()
    return read(store, hierarchy_map, level, inside, window, visibility)
