"""`GET /v3/tags/{tag}/reach` (design §4.5): where the data of tagged fields went."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from upstream.api.deps import SettingsDep, StoreDep, VisibilityDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import LEVELS, End, HistoryStart
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.services import read
from upstream.model.errors import NotFound
from upstream.query.answers import TagReachAnswer
from upstream.query.field_lineage import FieldQuery
from upstream.query.lineage_query import FieldLineageQuery
from upstream.query.tag_reach import tag_reach

router = APIRouter(tags=["field lineage"], route_class=EncodedSegmentsRoute)

#: Hops a reach follows unless asked: far, since the question is where the data ended up.
DEFAULT_LEVELS = "10"


@router.get(
    "/v3/tags/{tag}/reach",
    summary="Every dataset and field downstream of the fields carrying a tag",
    response_model=None,
    responses={
        200: {"model": TagReachAnswer},
        **documented(NotFound),
    },
)
def get_tag_reach(
    tag: str,
    store: StoreDep,
    settings: SettingsDep,
    visibility: VisibilityDep,
    start: HistoryStart = None,
    end: End = None,
    levels: Annotated[
        str | None,
        Query(description="Hops to follow; default 10, at most the max_levels setting"),
        LEVELS,
    ] = None,
) -> JsonAnswer[TagReachAnswer]:
    """`{"tag", "levels", "tagged": [{"dataset", "fields"}], "reach": [...]}`: the tagged
    fields (a tagged dataset tags each of its fields), whether tagged through the API or by a
    dataset's `tags` facet, and what their data flowed into, through every origin of field
    edges. A token limited to some namespaces sees their fields only, with `hiddenNodes`
    and `hiddenRelations` counting the fields and edges left out."""
    asked = FieldLineageQuery(
        start="0" if start is None else start,
        end=end,
        levels=str(DEFAULT_LEVELS) if levels is None else levels,
    )
    query = FieldQuery.parse(asked, max_levels=settings.max_levels)
    return read(store, tag_reach, tag, query, visibility)
