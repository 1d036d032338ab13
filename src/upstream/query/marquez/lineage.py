"""`GET /api/v1/lineage`: Marquez's job<->dataset graph, cumulative and exact (design §4.4).

Marquez draws a job's latest inputs and outputs, so a job that reads `customers` and `orders`
and writes `customer_summary` and `order_summary` looks as if each output came from both
inputs, and outputs of earlier runs vanish. Here:

- The walk follows real data flow (the flows derived at write time: explicit edges, then
  columnLineage, then inputs x outputs where nothing explicit exists) over every run and
  declaration.
  Upstream of a dataset are the jobs that wrote it and, through each, only the datasets that
  really fed it; downstream are the jobs that read it and only the outputs it really fed. A job
  seed contributes everything it read and wrote. Job->job edges (lineage facet JOB entries) are
  walked too. One level crosses one job, so `depth` counts jobs, as in Marquez.
- Edges are Marquez's `{origin, destination}`: dataset->job for a read, job->dataset for a
  write (over all runs), dataset->dataset for flows no job carried (a DatasetEvent's declared
  lineage) and job->job. Because a job node alone cannot say which input fed which output,
  each job->dataset edge also lists `sources`, the datasets whose data the job carried into
  that destination, and each dataset->job edge lists `targets`, where the origin's data went
  through the job. Clients that know only `origin`/`destination` see Marquez's graph.
- Node `data` is the entity's Dataset or Job document without facets (Marquez's graph has none
  either), a job with its latest run only.
- At most `max_nodes` nodes; a cut graph says `"truncated": true`.

The walk and the rows between the graph's nodes come from the graph index
(`upstream.query.graph_index.marquez_walk`); the nodes' documents are read by id.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from typing import cast

from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.nodeid import dataset_node_id, job_node_id
from upstream.model.window import Window
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.marquez_walk import MarquezGraph, marquez_graph
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.marquez.answers import GraphNode, MarquezGraphAnswer
from upstream.query.marquez.common import Json, resolve_node
from upstream.query.marquez.datasets import dataset_docs
from upstream.query.marquez.jobs import job_docs
from upstream.query.marquez.node_documents import node_documents


def lineage_graph(
    conn: Connection,
    node_id: str,
    depth: int,
    max_nodes: int,
    window: Window | None = None,
    visibility: Visibility = EVERYTHING,
) -> MarquezGraphAnswer:
    """The graph around `node_id` (a dataset or job), `depth` jobs deep each way; with a
    `window`, only its runs count (`Window.until(as_of)`: the graph as it stood then).
    With a `visibility` that does not show every namespace, a hidden node asked for is
    NotFound as a missing one is, the walk neither shows nor passes through what it hides,
    and the answer says how much it stopped at (`hiddenNodes`, `hiddenRelations`)."""
    seed = resolve_node(conn, node_id, visibility)
    if seed.kind == "datasetField":
        raise InvalidParameter.at(
            "nodeId", "lineage takes a dataset or job node id; use /column-lineage"
        )
    if seed.kind == "dataset":
        seed_id = DatasetRef(seed.namespace, seed.name).id
    else:
        seed_id = JobRef(seed.namespace, seed.name).id
    index = graph_of(conn)
    visible = VisibleNodes.of(conn, index, visibility)
    found = marquez_graph(index, seed.kind, str(seed_id), depth, max_nodes, window, visible)
    nodes = cast(list[GraphNode], _render(conn, found, index.position, visibility))
    answer: MarquezGraphAnswer = {"graph": nodes, "truncated": found.truncated}
    if visible is not None:
        answer["hiddenNodes"] = visible.hidden_nodes
        answer["hiddenRelations"] = visible.hidden_relations
    return answer


def _render(
    conn: Connection, graph: MarquezGraph, position: int, visibility: Visibility
) -> list[Json]:
    """The nodes with their documents, read by id (those the process keeps, with every
    namespace shown), and the edges between them."""

    # Without facets, as in Marquez's graph: they can be large, and the entity has them.
    def datasets_of(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Json]:
        return dataset_docs(conn, ids, facets=False)

    def jobs_of(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Json]:
        return job_docs(conn, ids, recent_runs=1, visibility=visibility, facets=False)

    dataset_ids = {uuid.UUID(i) for i in graph.datasets}
    job_ids = {uuid.UUID(i) for i in graph.jobs}
    if visibility.everything:
        kept = node_documents(conn.engine)
        found_datasets = kept.documents(conn, position, "dataset", dataset_ids, datasets_of)
        found_jobs = kept.documents(conn, position, "job", job_ids, jobs_of)
    else:
        found_datasets, found_jobs = datasets_of(conn, dataset_ids), jobs_of(conn, job_ids)
    datasets = {str(i): doc for i, doc in found_datasets.items()}
    jobs = {str(i): doc for i, doc in found_jobs.items()}
    ids = {i: dataset_node_id(d["namespace"], d["name"]) for i, d in datasets.items()}
    ids.update({i: job_node_id(j["namespace"], j["name"]) for i, j in jobs.items()})
    edges: dict[tuple[str, str], Json] = {}

    def edge(origin: str, destination: str) -> Json:
        key = (ids[origin], ids[destination])
        if key not in edges:
            edges[key] = {"origin": key[0], "destination": key[1]}
            if origin in jobs and destination in datasets:
                edges[key]["sources"] = []
            elif origin in datasets and destination in jobs:
                edges[key]["targets"] = []
        return edges[key]

    for dataset, job, access in graph.relations:
        if access == "read":
            edge(dataset, job)
        else:
            edge(job, dataset)
    for source, target, job_id in graph.flows:
        if job_id is None:
            edge(source, target)
            continue
        carried = edge(job_id, target)["sources"]
        fed = edge(source, job_id)["targets"]
        if ids[source] not in carried:
            carried.append(ids[source])
        if ids[target] not in fed:
            fed.append(ids[target])
    for source, target in graph.job_links:
        edge(source, target)
    incoming: dict[str, list[Json]] = defaultdict(list)
    outgoing: dict[str, list[Json]] = defaultdict(list)
    for key in sorted(edges):
        doc = edges[key]
        for names in ("sources", "targets"):
            if names in doc:
                doc[names].sort()
        outgoing[key[0]].append(doc)
        incoming[key[1]].append(doc)
    typed = [(i, "DATASET", doc) for i, doc in datasets.items()]
    typed += [(i, "JOB", doc) for i, doc in jobs.items()]
    nodes = [
        {
            "id": ids[i],
            "type": kind,
            "data": doc,
            "inEdges": incoming.get(ids[i], []),
            "outEdges": outgoing.get(ids[i], []),
        }
        for i, kind, doc in typed
    ]
    return sorted(nodes, key=lambda n: str(n["id"]))
