// Lineage responses turned into graph elements: datasets and programs as nodes, data flow as
// edges (a read goes dataset → program, a write program → dataset), so a left-to-right layered
// layout puts upstream on the left. Also the walks the graph's exploring needs: what lies
// upstream or downstream of a node, and what lies on the paths between two nodes.

import type { DiffRelation, LineageDiff, LineageResponse } from "./api";

export type NodeKind = "dataset" | "job" | "workflow";
export type Direction = "both" | "upstream" | "downstream";
/** How an element differs between the two sides of a diff. */
export type Change = "added" | "removed" | "kept";

export interface GraphNode {
  id: string;
  kind: NodeKind;
  namespace: string;
  name: string;
  temporary: boolean;
  centre: boolean;
  /** In a diff: only on the later side (added), only on the earlier (removed). */
  change?: Change;
  /** A caption made by the view (run lineage's runs and versions), used as it is. */
  caption?: string;
  /** Run lineage: the run this node is, or the run that wrote this dataset version. */
  runId?: string;
  version?: string;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  runs: number;
  /** In a diff: on both sides (kept), only the later (added), only the earlier (removed). */
  change?: Change;
  /** Control flow (a job dependency): the source job runs before the target, no data moves. */
  control?: boolean;
  /** A job dependency's kind, as the producer named it (DIRECT_INVOCATION…). */
  dependency?: string | null;
}

export interface LineageGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  truncated: boolean;
  /** How many nodes the reader's token may not see the server stopped at (0: none). */
  hidden?: number;
}

function kindOf(type: string): NodeKind {
  const lower = type.toLowerCase();
  if (lower === "dataset") return "dataset";
  return lower === "workflow" ? "workflow" : "job";
}

export function edgeId(source: string, target: string): string {
  return JSON.stringify([source, target]);
}

class EdgeSet {
  private readonly byPair = new Map<string, GraphEdge>();

  add(source: string, target: string, runs: number): void {
    const id = edgeId(source, target);
    const known = this.byPair.get(id);
    if (known) known.runs += runs;
    else this.byPair.set(id, { id, source, target, runs });
  }

  list(): GraphEdge[] {
    return [...this.byPair.values()];
  }
}

export interface Centre {
  kind: "dataset" | "job";
  namespace: string;
  name: string;
}

function isCentre(centre: Centre, kind: NodeKind, namespace: string, name: string): boolean {
  const sameKind = centre.kind === "dataset" ? kind === "dataset" : kind !== "dataset";
  return sameKind && namespace === centre.namespace && name === centre.name;
}

/** A dataset- or job-lineage response (design §4.2) as a graph around `centre`. */
export function fromRelations(response: LineageResponse, centre: Centre): LineageGraph {
  const nodes: GraphNode[] = [];
  for (const [id, entry] of Object.entries(response.data)) {
    const { namespace, name } = entry.entityId;
    nodes.push({
      id,
      kind: "dataset",
      namespace,
      name,
      temporary: entry.temporary === true,
      centre: isCentre(centre, "dataset", namespace, name),
    });
  }
  for (const [id, entry] of Object.entries(response.programs)) {
    const { type, namespace, name } = entry.entityId;
    const kind = kindOf(type);
    nodes.push({ id, kind, namespace, name, temporary: false, centre: isCentre(centre, kind, namespace, name) });
  }
  const edges = new EdgeSet();
  for (const relation of response.relations) {
    const runs = relation.runs.length;
    if (relation.accesses.includes("read")) edges.add(relation.data, relation.program, runs);
    if (relation.accesses.includes("write")) edges.add(relation.program, relation.data, runs);
  }
  const control: GraphEdge[] = (response.jobDependencies ?? []).map((dependency) => ({
    id: JSON.stringify(["control", dependency.upstream, dependency.downstream, dependency.dependencyType]),
    source: dependency.upstream,
    target: dependency.downstream,
    runs: dependency.runs.length,
    control: true,
    dependency: dependency.dependencyType,
  }));
  return {
    nodes,
    edges: [...edges.list(), ...control],
    truncated: response.truncated === true,
    hidden: response.hiddenNodes ?? 0,
  };
}

/** The (source, target) pairs a relation draws: a read dataset → program, a write program →
 * dataset. */
function pairsOf(relation: DiffRelation): [string, string][] {
  const pairs: [string, string][] = [];
  if (relation.accesses.includes("read")) pairs.push([relation.data, relation.program]);
  if (relation.accesses.includes("write")) pairs.push([relation.program, relation.data]);
  return pairs;
}

/**
 * A lineage diff as one graph: every node of either side, each edge marked by the sides that
 * draw it. Edges are compared as drawn (one per pair): a pair drawn by relations on both sides
 * is kept even when the relations differ in accesses or components.
 */
export function fromDiff(diff: LineageDiff, centre: Centre): LineageGraph {
  const graph = fromRelations(
    { start: 0, end: 0, relations: [], data: diff.data, programs: diff.programs, truncated: diff.truncated },
    centre,
  );
  const before = new Map<string, [string, string]>();
  const after = new Map<string, [string, string]>();
  const note = (sides: Map<string, [string, string]>[], relation: DiffRelation) => {
    for (const [source, target] of pairsOf(relation)) {
      for (const side of sides) side.set(edgeId(source, target), [source, target]);
    }
  };
  diff.removed.relations.forEach((relation) => note([before], relation));
  diff.added.relations.forEach((relation) => note([after], relation));
  diff.kept.forEach((relation) => note([before, after], relation));
  const edges: GraphEdge[] = [];
  for (const [id, [source, target]] of new Map([...before, ...after])) {
    const change: Change = before.has(id) && after.has(id) ? "kept" : after.has(id) ? "added" : "removed";
    edges.push({ id, source, target, runs: 0, change });
  }
  const added = new Set([...diff.added.data, ...diff.added.programs]);
  const removed = new Set([...diff.removed.data, ...diff.removed.programs]);
  for (const node of graph.nodes) {
    node.change = added.has(node.id) ? "added" : removed.has(node.id) ? "removed" : "kept";
  }
  return { ...graph, edges };
}

/** `base` with the nodes and edges of `extra` it lacks; the centre stays `base`'s. */
export function merged(base: LineageGraph, extra: LineageGraph): LineageGraph {
  const known = new Map(base.nodes.map((node) => [node.id, node]));
  const nodes = [...base.nodes];
  for (const node of extra.nodes) {
    const existing = known.get(node.id);
    if (!existing) {
      nodes.push({ ...node, centre: false });
      known.set(node.id, node);
    } else if (node.temporary && !existing.temporary) {
      existing.temporary = true;
    }
  }
  const edgeIds = new Set(base.edges.map((edge) => edge.id));
  const edges = [...base.edges, ...extra.edges.filter((edge) => !edgeIds.has(edge.id))];
  // The same hidden node may be met by both walks: the larger count, never more than there are.
  const hidden = Math.max(base.hidden ?? 0, extra.hidden ?? 0);
  return { nodes, edges, truncated: base.truncated || extra.truncated, hidden };
}

/** Who feeds whom: the edges of a graph indexed both ways. */
export class Adjacency {
  private readonly down = new Map<string, string[]>();
  private readonly up = new Map<string, string[]>();

  constructor(edges: Iterable<{ source: string; target: string }>) {
    for (const { source, target } of edges) {
      this.down.set(source, [...(this.down.get(source) ?? []), target]);
      this.up.set(target, [...(this.up.get(target) ?? []), source]);
    }
  }

  /** Every node reachable from `start` along (against, upstream) the data flow, `start`
   * excluded unless a cycle leads back to it; `without` is never entered. */
  reach(start: string, direction: "upstream" | "downstream", without?: string): Set<string> {
    const next = direction === "downstream" ? this.down : this.up;
    const seen = new Set<string>();
    const queue = [start];
    while (queue.length) {
      const id = queue.pop() as string;
      for (const other of next.get(id) ?? []) {
        if (other === without || seen.has(other)) continue;
        seen.add(other);
        queue.push(other);
      }
    }
    return seen;
  }

  /** Nodes connected to `start` whichever way edges point, not passing `without`. */
  connected(start: string, without: string): Set<string> {
    const seen = new Set<string>([start]);
    const queue = [start];
    while (queue.length) {
      const id = queue.pop() as string;
      for (const other of [...(this.down.get(id) ?? []), ...(this.up.get(id) ?? [])]) {
        if (other === without || seen.has(other)) continue;
        seen.add(other);
        queue.push(other);
      }
    }
    return seen;
  }

  /** The nodes on a path between `a` and `b`, either way round (both included); empty when
   * no path joins them. */
  between(a: string, b: string): Set<string> {
    const onPath = new Set<string>();
    for (const [from, to] of [
      [a, b],
      [b, a],
    ]) {
      const down = this.reach(from, "downstream");
      if (!down.has(to)) continue;
      const up = this.reach(to, "upstream");
      for (const id of down) if (up.has(id)) onPath.add(id);
      onPath.add(from).add(to);
    }
    return onPath;
  }
}

/**
 * The nodes a collapse of `id` in `direction` hides: those upstream (downstream) of it that
 * the centre no longer reaches once `id` is taken out. The centre itself is never hidden.
 */
export function collapsed(
  adjacency: Adjacency,
  id: string,
  direction: "upstream" | "downstream",
  centre: string | null,
): Set<string> {
  const side = adjacency.reach(id, direction, id);
  const kept = centre && centre !== id ? adjacency.connected(centre, id) : new Set<string>(centre ? [centre] : []);
  return new Set([...side].filter((other) => !kept.has(other)));
}
