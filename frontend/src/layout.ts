// The layered (Sugiyama) layout by ELK, left to right for every direction: a node's layer
// grows along the data flow, crossings are minimised layer by layer, and a dataset's fields
// are ports on its sides so column edges are ordered too. ELK runs in its own Web Worker, so
// the page stays responsive while a large graph is placed.

import ELK from "elkjs/lib/elk-api";
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api";

/** ELK's worker bundle, copied into the assets with its content hash at build time. */
declare const ELK_WORKER_URL: string;

export interface LayoutNode {
  id: string;
  width: number;
  height: number;
  /** Field rows of a dataset in the column view: a port on each side at the row's offset. */
  rows?: { id: string; y: number }[];
}

export interface LayoutEdge {
  id: string;
  /** A node id, or a row id (`LayoutNode.rows`) whose port the edge leaves or enters. */
  source: string;
  target: string;
}

export type Positions = Record<string, { x: number; y: number }>;

/** Above this many nodes the crossing minimisation does fewer passes and skips its greedy
 * switch: about 40 % faster for 14 % more crossings on the tests' 1,169-node graph
 * (docs/web-ui.md). */
const QUICK_LAYOUT_NODES = 400;

type Elk = InstanceType<typeof ELK>;
/** One worker kept between layouts (its compiled code stays warm for expanding a node); a
 * layout asked for while another runs ends that worker and starts a new one. */
let worker: Elk | null = null;
let busy = false;

export const outPort = (row: string) => `${row}>out`;
export const inPort = (row: string) => `${row}>in`;

/**
 * The centre of every node, left to right. A newer call cancels an older one, whose promise
 * then never settles.
 */
export async function layOut(
  nodes: LayoutNode[],
  edges: LayoutEdge[],
): Promise<Positions> {
  if (busy) {
    worker?.terminateWorker();
    worker = null;
  }
  const elk = worker ?? new ELK({ workerUrl: ELK_WORKER_URL });
  worker = elk;
  busy = true;
  const rowOwner = new Map<string, string>();
  const children: ElkNode[] = nodes.map((node) => {
    node.rows?.forEach((row) => rowOwner.set(row.id, node.id));
    return {
      id: node.id,
      width: node.width,
      height: node.height,
      layoutOptions: node.rows?.length ? { "elk.portConstraints": "FIXED_POS" } : ({} as Record<string, string>),
      ports: (node.rows ?? []).flatMap((row) => [
        { id: inPort(row.id), x: 0, y: row.y, width: 1, height: 1, layoutOptions: { "elk.port.side": "WEST" } },
        { id: outPort(row.id), x: node.width, y: row.y, width: 1, height: 1, layoutOptions: { "elk.port.side": "EAST" } },
      ]),
    };
  });
  const end = (id: string, port: (row: string) => string) => (rowOwner.has(id) ? port(id) : id);
  const elkEdges: ElkExtendedEdge[] = edges.map((edge) => ({
    id: edge.id,
    sources: [end(edge.source, outPort)],
    targets: [end(edge.target, inPort)],
  }));
  const quick = nodes.length > QUICK_LAYOUT_NODES;
  try {
    const placed = await elk.layout({
      id: "root",
      layoutOptions: {
        "elk.algorithm": "layered",
        "elk.direction": "RIGHT",
        "elk.edgeRouting": "POLYLINE",
        "elk.spacing.nodeNode": "14",
        "elk.layered.spacing.nodeNodeBetweenLayers": "48",
        "elk.layered.spacing.edgeNodeBetweenLayers": "12",
        "elk.layered.crossingMinimization.strategy": "LAYER_SWEEP",
        "elk.layered.thoroughness": quick ? "3" : "7",
        "elk.layered.crossingMinimization.greedySwitch.type": quick ? "OFF" : "TWO_SIDED",
        "elk.layered.nodePlacement.strategy": "BRANDES_KOEPF",
        "elk.layered.cycleBreaking.strategy": "GREEDY",
        "elk.separateConnectedComponents": "true",
        "elk.spacing.componentComponent": "40",
      },
      children,
      edges: elkEdges,
    });
    const positions: Positions = {};
    for (const child of placed.children ?? []) {
      positions[child.id] = { x: (child.x ?? 0) + (child.width ?? 0) / 2, y: (child.y ?? 0) + (child.height ?? 0) / 2 };
    }
    return positions;
  } finally {
    if (worker === elk) busy = false;
  }
}
