// What the page and the layout worker say to each other.

export interface LayoutRequest {
  nodes: string[];
  edges: [string, string][];
  /** Node box size in graph units; every node has the same box. */
  width: number;
  height: number;
  nodeSep: number;
  rankSep: number;
  ranker: "network-simplex" | "longest-path";
}

export interface LayoutResponse {
  positions: Record<string, { x: number; y: number }>;
}
