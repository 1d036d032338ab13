"""The whole lineage graph at dataset level, for `upstream export` and `GET /v3/lineage/graph`.

Every dataset and job, the dataset-to-dataset flows with the job that made each (from the
derived `flows` table, so the lineage facet's precedence and the inputs x outputs inference are
the same as everywhere else), and the explicit edges that touch a job itself (job -> job,
dataset -> job, job -> dataset), which have no dataset-level flow to stand for them. Keys and
entity ids have the shape of the dataset lineage response (design §4.2). The flows and edges
come from the graph index (`upstream.query.graph_index.graph_export`); the names of the
datasets and jobs from the database.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.keys import EntityKind, entity_key
from upstream.model.window import Window
from upstream.model.workflow import is_workflow
from upstream.query.answers import GraphAnswer
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.graph_export import EdgeEnd, flows_out_of, job_edges
from upstream.query.graph_index.index import graph_of
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.visibility import shown_namespaces

#: (source dataset key, target dataset key, job key or None for declared lineage)
FlowKey = tuple[str, str, str | None]


def lineage_graph(
    conn: Connection,
    max_nodes: int | None = None,
    window: Window | None = None,
    visibility: Visibility = EVERYTHING,
) -> GraphAnswer:
    """`{"data": {key: {"entityId"}}, "programs": {key: {"entityId"}}, "flows": [{"source",
    "target", "program", "runs", "inferred"}], "links": [{"source", "target"}]}`, sorted.

    `programs` holds the jobs the flows and links name. With `max_nodes`, datasets and
    programs together are at most `max_nodes`: datasets are kept in order of namespace and
    name, each with the programs that connect it to those kept before, until the next would
    pass the cap; the answer then says `"truncated": true`. With a `window`, only its runs
    count (`Window.until(as_of)`: the graph as it stood then).

    With a `visibility` that does not show every namespace, only its datasets and jobs are
    shown, and a flow or link is shown only when every node it names is; those with a shown
    node and a hidden one are counted (`hiddenRelations`), with the distinct hidden nodes
    they name (`hiddenNodes`), as a walk counts where it stopped (design §5). The cap counts
    shown nodes only.
    """
    d = t.datasets
    query = sa.select(d.c.id, d.c.namespace, d.c.name).where(
        visible(d), shown_namespaces(d.c.namespace, visibility)
    )
    query = query.order_by(d.c.namespace, d.c.name)
    if max_nodes is not None:
        query = query.limit(max_nodes + 1)
    rows = conn.execute(query).all()
    truncated = max_nodes is not None and len(rows) > max_nodes
    datasets: dict[str, str] = {}
    data: dict[str, Any] = {}
    for row in rows[:max_nodes]:
        datasets[str(row.id)] = entity_key("dataset", row.namespace, row.name)
        data[datasets[str(row.id)]] = _entity("dataset", row.namespace, row.name)
    hidden_datasets = _hidden_datasets(conn, visibility)
    hidden = set(hidden_datasets.values())
    jobs: dict[str, str] = {}
    entities: dict[str, Any] = {}
    j = t.jobs
    query = sa.select(j.c.id, j.c.namespace, j.c.name, j.c.job_type, j.c.seen_as_parent)
    for job in conn.execute(query):
        kind: EntityKind = "workflow" if is_workflow(job.job_type, job.seen_as_parent) else "job"
        key = jobs[str(job.id)] = entity_key(kind, job.namespace, job.name)
        if visibility.shows(job.namespace):
            entities[key] = _entity(kind, job.namespace, job.name)
        else:
            hidden.add(key)
    graph = graph_of(conn)
    ends = {**datasets, **hidden_datasets}
    found_flows = _flows(graph, ends, jobs, window)
    links = _job_links(graph, ends, jobs, window)
    stopped = _Stopped(hidden)
    found_flows = [f for f in found_flows if stopped.shows(f["source"], f["target"], f["program"])]
    links = [link for link in links if stopped.shows(link["source"], link["target"])]
    named = {f["program"] for f in found_flows} | {e for link in links for e in link.values()}
    programs = {key: entities[key] for key in sorted(named & entities.keys())}
    if max_nodes is not None and len(data) + len(programs) > max_nodes:
        kept_data, kept_programs = _within_cap(sorted(data), found_flows, links, max_nodes)
        truncated = True
        data = {key: data[key] for key in kept_data}
        programs = {key: programs[key] for key in sorted(kept_programs)}
        kept = kept_data | kept_programs
        found_flows = [
            f
            for f in found_flows
            if {f["source"], f["target"]} <= kept_data and f["program"] in kept | {None}
        ]
        links = [link for link in links if {link["source"], link["target"]} <= kept]
    answer: dict[str, Any] = {
        "data": dict(sorted(data.items())),
        "programs": programs,
        "flows": found_flows,
        "links": links,
    }
    if truncated:
        answer["truncated"] = True
    if not visibility.everything:
        answer["hiddenNodes"] = len(stopped.nodes)
        answer["hiddenRelations"] = stopped.relations
    return cast(GraphAnswer, answer)


def _hidden_datasets(conn: Connection, visibility: Visibility) -> dict[str, str]:
    """The live datasets `visibility` does not show, by id, to their keys (none for a full
    reader): a flow from one of them into a shown dataset is met and counted, never shown."""
    if visibility.everything:
        return {}
    d = t.datasets
    query = sa.select(d.c.id, d.c.namespace, d.c.name).where(
        visible(d), ~shown_namespaces(d.c.namespace, visibility)
    )
    return {
        str(row.id): entity_key("dataset", row.namespace, row.name) for row in conn.execute(query)
    }


class _Stopped:
    """The flows and links with a hidden node the whole graph met: how many had a shown node
    too (`relations`), and the distinct hidden nodes they named (`nodes`). One wholly among
    hidden nodes lies beyond where the reader's view stops, and is not counted."""

    def __init__(self, hidden: set[str]) -> None:
        self.hidden = hidden
        self.nodes: set[str] = set()
        self.relations = 0

    def shows(self, *ends: str | None) -> bool:
        named = [end for end in ends if end is not None]
        out = {end for end in named if end in self.hidden}
        if not out:
            return True
        if len(out) < len(named):
            self.relations += 1
            self.nodes |= out
        return False


def _within_cap(
    datasets: list[str], found_flows: list[dict[str, Any]], links: list[dict[str, str]], cap: int
) -> tuple[set[str], set[str]]:
    """The datasets (in the given order) and programs that fit in `cap` nodes: each dataset
    comes with the programs of its flows to datasets kept before it and the programs it is
    linked to directly; the first dataset that does not fit ends the graph."""
    needs: dict[str, list[tuple[str, str]]] = defaultdict(list)  # dataset -> (other, program)
    for flow in found_flows:
        if flow["program"] is not None:
            needs[flow["source"]].append((flow["target"], flow["program"]))
            needs[flow["target"]].append((flow["source"], flow["program"]))
    linked: dict[str, set[str]] = defaultdict(set)  # dataset -> programs linked to it
    for link in links:
        for end, other in ((link["source"], link["target"]), (link["target"], link["source"])):
            if not other.startswith("dataset."):
                linked[end].add(other)
    kept_data: set[str] = set()
    kept_programs: set[str] = set()
    for dataset in datasets:
        wanted = {p for other, p in needs[dataset] if other in kept_data or other == dataset}
        wanted = (wanted | linked[dataset]) - kept_programs
        if len(kept_data) + len(kept_programs) + 1 + len(wanted) > cap:
            break
        kept_data.add(dataset)
        kept_programs |= wanted
    return kept_data, kept_programs


def _flows(
    graph: Graph, datasets: dict[str, str], jobs: dict[str, str], window: Window | None
) -> list[dict[str, Any]]:
    """One entry per (source, target, job), counting its runs; inferred only when every run's
    flow was inferred."""
    runs: dict[FlowKey, set[str | None]] = defaultdict(set)
    explicit: set[FlowKey] = set()
    for flow in flows_out_of(graph, datasets.keys(), window):
        if flow.target not in datasets:
            continue
        program = jobs.get(flow.job) if flow.job else None
        key = (datasets[flow.source], datasets[flow.target], program)
        runs[key].add(flow.run)
        if not flow.inferred:
            explicit.add(key)
    return [
        {
            "source": source,
            "target": target,
            "program": program,
            "runs": len(run_ids - {None}),
            "inferred": (source, target, program) not in explicit,
        }
        for (source, target, program), run_ids in sorted(runs.items(), key=_sort_key)
    ]


def _job_links(
    graph: Graph, datasets: dict[str, str], jobs: dict[str, str], window: Window | None
) -> list[dict[str, str]]:
    links: set[tuple[str, str]] = set()
    for source_end, target_end in job_edges(graph, window):
        source = _end(source_end, datasets, jobs)
        target = _end(target_end, datasets, jobs)
        if source and target and source != target:
            links.add((source, target))
    return [{"source": s, "target": target} for s, target in sorted(links)]


def _end(end: EdgeEnd, datasets: dict[str, str], jobs: dict[str, str]) -> str | None:
    if end.id is None:
        return None
    return (jobs if end.kind == "job" else datasets).get(end.id)


def _entity(kind: str, namespace: str, name: str) -> dict[str, Any]:
    return {"entityId": {"type": kind, "namespace": namespace, "name": name}}


def _sort_key(item: tuple[FlowKey, set[str | None]]) -> tuple[str, str, str]:
    (source, target, program), _ = item
    return (source, target, program or "")
