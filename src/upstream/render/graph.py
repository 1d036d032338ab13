"""A drawing-neutral graph built from lineage responses; DOT and Mermaid draw this."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from upstream.model.keys import parse_entity_key

NodeKind = Literal["dataset", "job", "workflow", "field"]
#: How an edge of a lineage diff changed: "" for one on both sides.
Change = Literal["", "added", "removed"]
NodeKey = tuple[str, str, str, str]
_KIND_OF_KEY_PREFIX: dict[str, NodeKind] = {
    "dataset": "dataset",
    "job": "job",
    "workflow": "workflow",
}


@dataclass(frozen=True, order=True)
class Node:
    """A dataset, a job (or workflow), or one field of a dataset."""

    kind: NodeKind
    namespace: str
    name: str
    field: str | None = None
    focus: bool = False
    temporary: bool = False

    @property
    def key(self) -> NodeKey:
        """Identity of the node; flags such as `focus` do not make a second node."""
        kind = "job" if self.kind == "workflow" else self.kind
        return (kind, self.namespace, self.name, self.field or "")

    @property
    def title(self) -> str:
        """The first line of a label: the name, or `dataset.field` for a field."""
        return self.name if self.field is None else f"{self.name}.{self.field}"


@dataclass(frozen=True, order=True)
class Edge:
    """Data flows from `source` to `target` (node keys); `label` names what moved it, and in
    a diff `change` says whether the edge is new or gone (drawn green or red)."""

    source: NodeKey
    target: NodeKey
    label: str = ""
    change: Change = ""


@dataclass(frozen=True)
class Graph:
    """Nodes and edges in a stable order, so the same answer always draws the same text."""

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]


def build(title: str, nodes: Iterable[Node], edges: Iterable[Edge]) -> Graph:
    """A graph with each node once (a focused or temporary mention wins) and sorted parts."""
    unique: dict[NodeKey, Node] = {}
    for node in nodes:
        known = unique.get(node.key)
        if known is None or (node.focus, node.temporary) > (known.focus, known.temporary):
            unique[node.key] = node
    ordered = sorted(unique.values(), key=lambda n: n.key)
    return Graph(title, tuple(ordered), tuple(sorted(set(edges))))


def dataset_lineage_graph(response: Mapping[str, Any], focus: tuple[str, str] | None) -> Graph:
    """Datasets and jobs of a dataset-lineage response (design §4.2): a read is an edge from
    the dataset into the job, a write one from the job into the dataset."""
    nodes = _focused({**response.get("data", {}), **response.get("programs", {})}, focus)
    edges = _relation_edges(response.get("relations", []), nodes)
    for link in response.get("jobLinks", []):  # rollup=jobs: through temporary datasets
        source, target = nodes.get(link["source"]), nodes.get(link["target"])
        if source and target:
            names = [parse_entity_key(key)[2] for key in link["through"]]
            edges.add(Edge(source.key, target.key, "via " + ", ".join(names)))
    title = f"lineage of {focus[0]}/{focus[1]}" if focus else "lineage"
    return build(title, nodes.values(), edges)


def _focused(entries: Mapping[str, Any], focus: tuple[str, str] | None) -> dict[str, Node]:
    nodes = {key: _entity_node(key, entry) for key, entry in entries.items()}
    return {
        key: Node("dataset", n.namespace, n.name, focus=True, temporary=n.temporary)
        if focus is not None and n.kind == "dataset" and (n.namespace, n.name) == focus
        else n
        for key, n in nodes.items()
    }


def _relation_edges(
    relations: Iterable[Mapping[str, Any]], nodes: Mapping[str, Node], change: Change = ""
) -> set[Edge]:
    """A read is an edge from the dataset into the job, a write one from the job out."""
    edges: set[Edge] = set()
    for relation in relations:
        data, program = nodes.get(relation["data"]), nodes.get(relation["program"])
        if data is None or program is None:
            continue
        for access in relation.get("accesses", []):
            if access == "read":
                edges.add(Edge(data.key, program.key, change=change))
            elif access == "write":
                edges.add(Edge(program.key, data.key, change=change))
    return edges


def lineage_diff_graph(response: Mapping[str, Any], focus: tuple[str, str]) -> Graph:
    """Both sides of a lineage diff (design §4.5) in one picture: kept relations as usual,
    added ones green, removed ones red; a field edge that changed joins the two fields."""
    nodes = _focused({**response.get("data", {}), **response.get("programs", {})}, focus)
    edges = _relation_edges(response.get("kept", []), nodes)
    extra: list[Node] = []
    sides: tuple[Change, ...] = ("added", "removed")
    for change in sides:
        changes = response.get(change, {})
        edges |= _relation_edges(changes.get("relations", []), nodes, change)
        for field_edge in changes.get("fieldEdges", []):
            ends = [
                Node("field", end["namespace"], end["name"], end["field"])
                for end in (field_edge["source"], field_edge["target"])
            ]
            extra += ends
            edges.add(Edge(ends[0].key, ends[1].key, change=change))
    title = f"lineage changes of {focus[0]}/{focus[1]}"
    return build(title, [*nodes.values(), *extra], edges)


def field_summary_graph(
    response: Mapping[str, Any], namespace: str, dataset: str, field: str
) -> Graph:
    """The field at the centre, the fields it comes from on the left and flows to on the right
    (design §4.3's incoming/outgoing summary)."""
    centre = Node("field", namespace, dataset, field, focus=True)
    nodes = [centre]
    edges: list[Edge] = []
    for side in ("incoming", "outgoing"):
        for entry in response.get(side) or []:
            ref = entry["dataset"]
            for name in entry.get("fields", []):
                node = Node("field", ref["namespace"], ref["name"], name)
                nodes.append(node)
                pair = (node.key, centre.key) if side == "incoming" else (centre.key, node.key)
                edges.append(Edge(*pair))
    return build(f"field lineage of {namespace}/{dataset}.{field}", nodes, edges)


def whole_graph(response: Mapping[str, Any]) -> Graph:
    """Every dataset and the flows between them, each edge labelled with the jobs that made it.

    Jobs become nodes only where an explicit edge touches a job itself (job -> job, or a
    dataset feeding a job with no dataset between), so the picture stays dataset-centred.
    """
    entities = {key: _entity_node(key, e) for key, e in response.get("data", {}).items()}
    entities.update({key: _entity_node(key, e) for key, e in response.get("programs", {}).items()})
    jobs_per_pair: dict[tuple[str, str], set[str]] = {}
    for flow in response.get("flows", []):
        job = entities.get(flow.get("program") or "")
        jobs_per_pair.setdefault((flow["source"], flow["target"]), set()).update(
            [job.name] if job else []
        )
    nodes = [n for n in entities.values() if n.kind == "dataset"]
    edges = [
        Edge(entities[s].key, entities[t].key, _jobs_label(jobs))
        for (s, t), jobs in jobs_per_pair.items()
        if s in entities and t in entities
    ]
    for link in response.get("links", []):
        source, target = entities.get(link["source"]), entities.get(link["target"])
        if source and target:
            nodes += [source, target]
            edges.append(Edge(source.key, target.key))
    return build("lineage graph", nodes, edges)


def _jobs_label(jobs: set[str], shown: int = 3) -> str:
    names = sorted(jobs)
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" (+{more})" if more > 0 else "")


def _entity_node(key: str, entry: Mapping[str, Any]) -> Node:
    """A node from a response's `{"entityId": {"type", "namespace", "name"}}` entry; the
    key's prefix (`dataset.`, `job.`, `workflow.`) tells the kind."""
    entity = entry.get("entityId", {})
    return Node(
        _KIND_OF_KEY_PREFIX.get(key.split(".", 1)[0], "job"),
        str(entity.get("namespace", "")),
        str(entity.get("name", key)),
        temporary=bool(entry.get("temporary", False)),
    )


def run_lineage_graph(response: Mapping[str, Any]) -> Graph:
    """Runs (drawn as jobs, named with their job and short run id) and the dataset versions
    between them (drawn as datasets, named with the writing run): reads flow from a version
    into a run, writes from a run into a version."""
    nodes: dict[str, Node] = {}
    for run in response.get("runs", []):
        job = run.get("job", {})
        focus = run["runId"] == response.get("runId")
        title = f"{job.get('name', '')} {str(run['runId'])[:8]}"
        nodes[run["runId"]] = Node("job", str(job.get("namespace", "")), title, focus=focus)
    for version in response.get("datasetVersions", []):
        dataset = version.get("dataset", {})
        writer = version.get("writtenBy")
        title = f"{dataset.get('name', '')} @ {str(writer)[:8] if writer else 'unknown'}"
        nodes[version["id"]] = Node("dataset", str(dataset.get("namespace", "")), title)
    edges = []
    for edge in response.get("edges", []):
        run, version = nodes.get(edge["run"]), nodes.get(edge["datasetVersion"])
        if run is None or version is None:
            continue
        pair = (version.key, run.key) if edge["type"] == "read" else (run.key, version.key)
        edges.append(Edge(*pair))
    for dependency in response.get("jobDependencies", []):  # control flow, between runs
        first, then = (
            nodes.get(dependency["upstream"]["runId"]),
            nodes.get(dependency["downstream"]["runId"]),
        )
        if first is not None and then is not None:
            edges.append(Edge(first.key, then.key, "runs before"))
    return build(f"lineage of run {response.get('runId', '')}", nodes.values(), edges)
