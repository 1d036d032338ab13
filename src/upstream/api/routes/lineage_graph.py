"""`GET /v3/lineage/graph`: the whole dataset-level lineage graph (what `upstream export`
draws), cut at the lineage node cap."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from upstream.api.deps import SettingsDep, StoreDep
from upstream.query.whole_graph import lineage_graph
from upstream.store.engine import Store

router = APIRouter(tags=["dataset lineage"])


@router.get("/v3/lineage/graph", summary="Every dataset and the data flows between them")
async def get_lineage_graph(store: StoreDep, settings: SettingsDep) -> dict[str, Any]:
    """Datasets, the jobs that move data, the flows (source, target, job, runs, inferred) and
    the explicit edges that touch a job; `"truncated": true` past `max_lineage_nodes`."""
    return await run_in_threadpool(_graph, store, settings.max_lineage_nodes)


def _graph(store: Store, max_nodes: int) -> dict[str, Any]:
    with store.read() as conn:
        return lineage_graph(conn, max_nodes=max_nodes)
