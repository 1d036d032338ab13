// One field's lineage as a graph (the field view): each dataset on the field's paths is a box
// with its fields as rows, field edges join the rows, and the chosen field's upstream and
// downstream fields are highlighted. Laid out and styled as the lineage graph is.

import type { Core } from "cytoscape";

import type { ColumnGraph } from "./api";
import { openCanvas } from "./canvas";
import { columnsOf, rowId } from "./columns";
import { drawing, focusOn, placed } from "./graph-canvas";
import { highlight } from "./graph-explore";
import { Adjacency, type GraphNode, type LineageGraph } from "./graph-model";
import { layOut } from "./layout";

declare global {
  interface Window {
    __upstreamFieldGraph?: { cy: Core; field: string };
  }
}

/** The datasets of a field graph as graph nodes; `temporary` holds `[namespace, name]` keys. */
function datasetsOf(fields: ColumnGraph, temporary: Set<string>, centre: { namespace: string; name: string }): LineageGraph {
  const nodes = new Map<string, GraphNode>();
  for (const node of fields.graph) {
    const key = JSON.stringify([node.data.namespace, node.data.dataset]);
    if (nodes.has(key)) continue;
    nodes.set(key, {
      id: `dataset:${key}`,
      kind: "dataset",
      namespace: node.data.namespace,
      name: node.data.dataset,
      temporary: temporary.has(key),
      centre: node.data.namespace === centre.namespace && node.data.dataset === centre.name,
    });
  }
  return { nodes: [...nodes.values()], edges: [], truncated: fields.truncated === true };
}

/** Draw the field graph into `container`; the chosen field is selected. */
export async function drawFieldGraph(
  container: HTMLElement,
  fields: ColumnGraph,
  temporary: Set<string>,
  centre: { namespace: string; name: string; field: string },
  onPick: (namespace: string, name: string, field: string) => void,
): Promise<Core | null> {
  const graph = datasetsOf(fields, temporary, centre);
  const columns = columnsOf(graph, fields);
  const plan = drawing(graph, columns, false);
  const positions = await layOut(plan.layoutNodes, plan.layoutEdges);
  if (!container.isConnected) return null;
  const at = placed(plan, positions);
  const cy = openCanvas(
    container,
    plan.elements.map((element) => ({ ...element, position: at[String(element.data.id)] })),
    0.1,
  );
  const adjacency = new Adjacency(columns.edges);
  const centreNode = graph.nodes.find((node) => node.centre);
  const chosen = centreNode ? rowId(centreNode.id, centre.field) : null;
  focusOn(cy, centreNode?.id ?? null);
  if (chosen && cy.getElementById(chosen).nonempty()) highlight(cy, chosen, adjacency);
  cy.on("tap", "node[kind = 'field']", (event) => {
    const row = event.target;
    onPick(row.data("namespace") as string, row.data("name") as string, row.data("field") as string);
  });
  window.__upstreamFieldGraph = { cy, field: centre.field };
  return cy;
}
