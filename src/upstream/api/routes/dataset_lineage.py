"""`GET /v3/namespaces/{ns}/datasets/{ds}/lineage`: CDAP's dataset lineage (design §4.2)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from upstream.api.deps import ReaderDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.lineage_query import LineageParamsDep, asked
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.services import read_walk
from upstream.model.errors import NotFound
from upstream.query.answers import LineageAnswer, LineageDiffAnswer
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.lineage_diff import DiffParams, lineage_diff
from upstream.query.lineage_query import DiffQuery

#: Names hold `/` (`s3://bucket`): clients percent-encode them, and the route matches the raw
#: path so each segment is decoded exactly once (design §4.4).
router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)

_PATH = "/v3/namespaces/{namespace}/datasets/{dataset}/lineage"
_RESPONSES = documented(NotFound)


@router.get(
    _PATH,
    summary="Lineage of a dataset (CDAP style)",
    response_model=None,
    responses={200: {"model": LineageAnswer}, **_RESPONSES},
)
def get_dataset_lineage(
    namespace: str,
    dataset: str,
    reader: ReaderDep,
    params: LineageParamsDep,
) -> JsonAnswer[LineageAnswer]:
    """Relations (dataset, program, accesses, runs, components) around one dataset; for a
    token limited to some namespaces, only through what it may see, with how much it hid."""
    return read_walk(
        reader.store,
        dataset_lineage,
        namespace,
        dataset,
        params,
        max_nodes=reader.settings.max_lineage_nodes,
        max_relations=reader.settings.max_lineage_relations,
        visibility=reader.visibility,
        written=True,
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
    reader: ReaderDep,
    query: Annotated[DiffQuery, Depends(asked(DiffQuery))],
) -> JsonAnswer[LineageDiffAnswer]:
    """Relations and field edges `added` and `removed`, the runs of each kept relation on
    both sides, and the datasets and programs that appeared or disappeared."""
    params = DiffParams.parse(query, max_levels=reader.settings.max_levels)
    return read_walk(
        reader.store,
        lineage_diff,
        namespace,
        dataset,
        params,
        max_nodes=reader.settings.max_lineage_nodes,
        max_relations=reader.settings.max_lineage_relations,
        visibility=reader.visibility,
        written=True,
    )
