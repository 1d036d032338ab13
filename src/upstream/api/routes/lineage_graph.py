"""`GET /v3/lineage/graph`: the whole dataset-level lineage graph (what `upstream export`
draws), cut at the lineage node cap."""

from __future__ import annotations

from fastapi import APIRouter

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.json_answer import JsonAnswer
from upstream.api.params import AsOf, history_window
from upstream.api.services import read
from upstream.query.answers import GraphAnswer
from upstream.query.whole_graph import lineage_graph

router = APIRouter(tags=["dataset lineage"])


@router.get(
    "/v3/lineage/graph",
    summary="Every dataset and the data flows between them",
    response_model=None,
    responses={200: {"model": GraphAnswer}},
)
def get_lineage_graph(
    store: StoreDep, settings: SettingsDep, as_of: AsOf = None
) -> JsonAnswer[GraphAnswer]:
    """Datasets, the jobs that move data, the flows (source, target, job, runs, inferred) and
    the explicit edges that touch a job; `"truncated": true` past `max_lineage_nodes`. With
    `asOf`, the runs that had started by then and the declarations of then."""
    window = history_window(as_of)
    return read(store, lineage_graph, max_nodes=settings.max_lineage_nodes, window=window)
