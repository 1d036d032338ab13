// Lineage responses turned into graph elements: datasets and programs as nodes, data flow as
// edges (a read goes dataset → program, a write program → dataset), so a left-to-right layered
// layout puts upstream on the left.

import type { LineageResponse, MarquezGraph, MarquezNode } from "./api";

export type NodeKind = "dataset" | "job" | "workflow";

export interface GraphNode {
  id: string;
  kind: NodeKind;
  namespace: string;
  name: string;
  temporary: boolean;
  centre: boolean;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  runs: number;
}

export interface LineageGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  truncated: boolean;
}

function kindOf(type: string): NodeKind {
  const lower = type.toLowerCase();
  if (lower === "dataset") return "dataset";
  return lower === "workflow" ? "workflow" : "job";
}

class EdgeSet {
  private readonly byPair = new Map<string, GraphEdge>();

  add(source: string, target: string, runs: number): void {
    const id = JSON.stringify([source, target]);
    const known = this.byPair.get(id);
    if (known) known.runs += runs;
    else this.byPair.set(id, { id, source, target, runs });
  }

  list(): GraphEdge[] {
    return [...this.byPair.values()];
  }
}

/** The dataset-lineage response (DESIGN §4.2) as a graph centred on one dataset. */
export function fromRelations(
  response: LineageResponse,
  centre: { namespace: string; name: string },
): LineageGraph {
  const nodes: GraphNode[] = [];
  for (const [id, entry] of Object.entries(response.data)) {
    const { namespace, name } = entry.entityId;
    nodes.push({
      id,
      kind: "dataset",
      namespace,
      name,
      temporary: entry.temporary === true,
      centre: namespace === centre.namespace && name === centre.name,
    });
  }
  for (const [id, entry] of Object.entries(response.programs)) {
    const { type, namespace, name } = entry.entityId;
    nodes.push({ id, kind: kindOf(type), namespace, name, temporary: false, centre: false });
  }
  const edges = new EdgeSet();
  for (const relation of response.relations) {
    const runs = relation.runs.length;
    if (relation.accesses.includes("read")) edges.add(relation.data, relation.program, runs);
    if (relation.accesses.includes("write")) edges.add(relation.program, relation.data, runs);
  }
  return { nodes, edges: edges.list(), truncated: response.truncated === true };
}

function identity(node: MarquezNode): { namespace: string; name: string } {
  const data = node.data ?? {};
  const namespace = data.namespace ?? data.id?.namespace;
  const name = data.name ?? data.id?.name;
  if (namespace !== undefined && name !== undefined) return { namespace, name };
  // `type:namespace:name` where the name has no ':' — only a fallback for data-less nodes.
  const rest = node.id.slice(node.id.indexOf(":") + 1);
  const cut = rest.lastIndexOf(":");
  return { namespace: rest.slice(0, cut), name: rest.slice(cut + 1) };
}

export type Direction = "both" | "upstream" | "downstream";

/**
 * A Marquez lineage graph (DESIGN §4.4) centred on `centreId`, keeping the nodes within `hops`
 * steps of it: along edges for upstream/downstream, in any direction for both.
 */
export function fromMarquez(
  graph: MarquezGraph,
  centreId: string,
  direction: Direction,
  hops: number,
): LineageGraph {
  const byId = new Map(graph.graph.map((node) => [node.id, node]));
  const next = (node: MarquezNode): string[] => {
    const down = node.outEdges.map((edge) => edge.destination);
    const up = node.inEdges.map((edge) => edge.origin);
    if (direction === "downstream") return down;
    if (direction === "upstream") return up;
    return [...down, ...up];
  };
  const kept = new Set<string>();
  let frontier = byId.has(centreId) ? [centreId] : [];
  for (let step = 0; step <= hops && frontier.length; step++) {
    const following: string[] = [];
    for (const id of frontier) {
      if (kept.has(id)) continue;
      kept.add(id);
      const node = byId.get(id);
      if (node) following.push(...next(node).filter((other) => byId.has(other)));
    }
    frontier = following;
  }
  const nodes: GraphNode[] = [];
  const edges = new EdgeSet();
  for (const id of kept) {
    const node = byId.get(id) as MarquezNode;
    nodes.push({
      id,
      kind: node.type === "DATASET" ? "dataset" : "job",
      ...identity(node),
      temporary: false,
      centre: id === centreId,
    });
    for (const edge of node.outEdges) {
      if (kept.has(edge.destination)) edges.add(edge.origin, edge.destination, 0);
    }
  }
  return { nodes, edges: edges.list(), truncated: graph.truncated === true };
}
