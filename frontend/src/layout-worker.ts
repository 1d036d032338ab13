// The layered (Sugiyama) layout, run off the page's thread so the page stays responsive while
// a large graph is placed. Left to right: a node's rank grows along the data flow.

import dagre from "@dagrejs/dagre";

import type { LayoutRequest, LayoutResponse } from "./layout-protocol";

function place(request: LayoutRequest): LayoutResponse {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({
    rankdir: "LR",
    nodesep: request.nodeSep,
    ranksep: request.rankSep,
    ranker: request.ranker,
  });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const id of request.nodes) graph.setNode(id, { width: request.width, height: request.height });
  for (const [source, target] of request.edges) graph.setEdge(source, target);
  dagre.layout(graph);
  const positions: LayoutResponse["positions"] = {};
  for (const id of request.nodes) {
    const node = graph.node(id);
    positions[id] = { x: node.x, y: node.y };
  }
  return { positions };
}

self.onmessage = (event: MessageEvent<LayoutRequest>) => {
  self.postMessage(place(event.data));
};
