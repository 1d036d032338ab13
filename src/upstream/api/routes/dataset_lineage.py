"""`GET /v3/namespaces/{ns}/datasets/{ds}/lineage`: CDAP's dataset lineage (design §4.2)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import WithJsonSchema

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.lineage_query import LineageParamsDep
from upstream.api.params import LEVELS, TIME_SCHEMA, Collapse
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.services import read
from upstream.model.direction import Direction
from upstream.model.errors import NotFound
from upstream.query.answers import LineageAnswer, LineageDiffAnswer
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.lineage_diff import DiffParams, lineage_diff
from upstream.query.lineage_params import Rollup

#: Names hold `/` (`s3://bucket`): clients percent-encode them, and the route matches the raw
#: path so each segment is decoded exactly once (design §4.4).
router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)

_PATH = "/v3/namespaces/{namespace}/datasets/{dataset}/lineage"
_RESPONSES = documented(NotFound)
Levels = Annotated[
    str | None,
    Query(description="Levels to walk; default 10, at most the max_levels setting"),
    LEVELS,
]
RollupParam = Annotated[
    Rollup | None, Query(description="workflow: jobs inside workflows become the workflow")
]
DirectionParam = Annotated[
    Direction | None, Query(description="both (default), upstream or downstream")
]
_WINDOW = WithJsonSchema({"type": "string", "format": "time-window"})


@router.get(
    _PATH,
    summary="Lineage of a dataset (CDAP style)",
    response_model=None,
    responses={200: {"model": LineageAnswer}, **_RESPONSES},
)
def get_dataset_lineage(
    namespace: str,
    dataset: str,
    store: StoreDep,
    settings: SettingsDep,
    params: LineageParamsDep,
) -> JsonAnswer[LineageAnswer]:
    """Relations (dataset, program, accesses, runs, components) around one dataset."""
    return read(
        store,
        dataset_lineage,
        namespace,
        dataset,
        params,
        max_nodes=settings.max_lineage_nodes,
        max_relations=settings.max_lineage_relations,
    )


@router.get(
    _PATH + "/diff",
    summary="What changed in a dataset's lineage between two windows or two times",
    response_model=None,
    responses={200: {"model": LineageDiffAnswer}, **_RESPONSES},
)
def get_lineage_diff(
    namespace: str,
    dataset: str,
    store: StoreDep,
    settings: SettingsDep,
    from_window: Annotated[
        str | None,
        Query(
            alias="from",
            description="The earlier window, START..END; default the window of the same "
            "length just before `to`",
        ),
        _WINDOW,
    ] = None,
    to_window: Annotated[
        str | None,
        Query(alias="to", description="The later window, START..END; default now-7d..now"),
        _WINDOW,
    ] = None,
    as_of: Annotated[
        str | None,
        Query(
            alias="asOf",
            description="Instead of windows, two times: the lineage as it stood at this time "
            "(default now) against its state at `against`",
        ),
        TIME_SCHEMA,
    ] = None,
    against: Annotated[
        str | None,
        Query(description="The earlier time to compare with; default seven days before asOf"),
        TIME_SCHEMA,
    ] = None,
    start: Annotated[
        str | None,
        Query(description="With asOf and against: each side's window start; default now-7d"),
        TIME_SCHEMA,
    ] = None,
    end: Annotated[
        str | None,
        Query(description="With asOf and against: each side's window end; default now"),
        TIME_SCHEMA,
    ] = None,
    levels: Levels = None,
    collapse: Collapse = None,
    rollup: RollupParam = None,
    direction: DirectionParam = None,
) -> JsonAnswer[LineageDiffAnswer]:
    """Relations and field edges `added` and `removed`, the runs of each kept relation on
    both sides, and the datasets and programs that appeared or disappeared."""
    params = DiffParams.parse(
        max_levels=settings.max_levels,
        from_window=from_window,
        to_window=to_window,
        as_of=as_of,
        against=against,
        start=start,
        end=end,
        levels=levels,
        collapse=collapse or (),
        rollup=rollup,
        direction=direction,
    )
    return read(
        store,
        lineage_diff,
        namespace,
        dataset,
        params,
        max_nodes=settings.max_lineage_nodes,
        max_relations=settings.max_lineage_relations,
    )
