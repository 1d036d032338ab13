// From a lineage graph to what Cytoscape draws: elements with their captions and sizes, the
// layout's input (field rows as ports), and the viewport a graph opens with.

import type { Core, ElementDefinition } from "cytoscape";

import type { Columns } from "./columns";
import type { LineageGraph } from "./graph-model";
import { HIDDEN_LABEL_SIZE, LABEL_FONT_SIZE, LINE_HEIGHT, NODE_PADDING, NODE_WIDTH, ROW_GAP, ROW_HEIGHT } from "./graph-style";
import { captions, fullLabel, lineCount, rowCaption } from "./labels";
import type { LayoutEdge, LayoutNode, Positions } from "./layout";

/** Room left around the graph when it is fitted to the canvas, in pixels. */
const PADDING = 24;
/** The smallest label a graph opens with, in pixels: readable without leaning in. */
export const READABLE_LABEL = 11;
/** The zoom at which labels are READABLE_LABEL pixels high. */
export const READABLE_ZOOM = READABLE_LABEL / LABEL_FONT_SIZE;
/** "Fit all" never zooms out further: below it nodes are specks; the minimap shows the whole. */
export const FIT_FLOOR = 0.1;

export interface Drawing {
  elements: ElementDefinition[];
  layoutNodes: LayoutNode[];
  layoutEdges: LayoutEdge[];
  /** Where each field row sits relative to its dataset's centre. */
  rowOffsets: Map<string, { dataset: string; dy: number }>;
}

/** Everything to draw for `graph` (with `columns`, the column view). */
export function drawing(graph: LineageGraph, columns: Columns | null, namespaces: boolean): Drawing {
  const texts = captions(graph.nodes, namespaces);
  const elements: ElementDefinition[] = [];
  const layoutNodes: LayoutNode[] = [];
  const rowOffsets = new Map<string, { dataset: string; dy: number }>();
  for (const node of graph.nodes) {
    const caption = node.caption ?? texts.get(node.id) ?? fullLabel(node);
    const rows = columns?.rows.get(node.id) ?? [];
    const header = lineCount(caption) * LINE_HEIGHT + NODE_PADDING;
    const height = header + rows.length * ROW_HEIGHT + (rows.length ? ROW_GAP : 0);
    const top = header;
    elements.push({
      group: "nodes",
      classes: node.change ? `change-${node.change}` : undefined,
      data: {
        ...node,
        label: fullLabel(node),
        caption,
        width: NODE_WIDTH,
        height,
        rows: rows.length,
        labelShift: header - NODE_PADDING / 2,
      },
    });
    layoutNodes.push({
      id: node.id,
      width: NODE_WIDTH,
      height,
      rows: rows.map((row, index) => ({ id: row.id, y: top + index * ROW_HEIGHT + ROW_HEIGHT / 2 })),
    });
    rows.forEach((row, index) => {
      rowOffsets.set(row.id, { dataset: node.id, dy: top + index * ROW_HEIGHT + ROW_HEIGHT / 2 - height / 2 });
      elements.push({
        group: "nodes",
        data: {
          id: row.id,
          kind: "field",
          dataset: node.id,
          namespace: node.namespace,
          name: node.name,
          field: row.field,
          caption: rowCaption(row.field, row.type),
          type: row.type,
          label: row.field,
          width: NODE_WIDTH - 12,
          height: ROW_HEIGHT - 2,
          temporary: node.temporary,
        },
      });
    });
  }
  const layoutEdges: LayoutEdge[] = graph.edges.map((edge) => ({ id: edge.id, source: edge.source, target: edge.target }));
  for (const edge of graph.edges) {
    elements.push({ group: "edges", classes: edge.change ? `change-${edge.change}` : undefined, data: { ...edge } });
  }
  for (const edge of columns?.edges ?? []) {
    elements.push({ group: "edges", data: { ...edge, field: true } });
    layoutEdges.push(edge);
  }
  return { elements, layoutNodes, layoutEdges, rowOffsets };
}

/** The positions of every element: nodes from the layout, field rows inside their dataset. */
export function placed(draw: Drawing, positions: Positions): Positions {
  const all: Positions = { ...positions };
  for (const [row, { dataset, dy }] of draw.rowOffsets) {
    const at = positions[dataset];
    if (at) all[row] = { x: at.x, y: at.y + dy };
  }
  return all;
}

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * The visible nodes' extent, from their positions and sizes: Cytoscape's own bounding boxes
 * measure every label and edge, which takes seconds on a large graph.
 */
function extent(cy: Core): Box {
  const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
  cy.nodes(":visible").forEach((node) => {
    const { x, y } = node.position();
    const w = Number(node.data("width")) / 2;
    const h = Number(node.data("height")) / 2;
    box.x1 = Math.min(box.x1, x - w);
    box.x2 = Math.max(box.x2, x + w);
    box.y1 = Math.min(box.y1, y - h);
    box.y2 = Math.max(box.y2, y + h);
  });
  return box;
}

/** The zoom that shows every visible node (at most a little above full size), and where. */
function fitting(cy: Core): { zoom: number; box: Box } | null {
  const box = extent(cy);
  if (!Number.isFinite(box.x1)) return null;
  const zoom = Math.min(
    1.2,
    (cy.width() - 2 * PADDING) / (box.x2 - box.x1),
    (cy.height() - 2 * PADDING) / (box.y2 - box.y1),
  );
  return { zoom, box };
}

/** What "Fit all" could not do: everything shown, or labels left readable. */
export interface FitOutcome {
  /** Every visible node is on screen (false when the floor stopped the zoom). */
  whole: boolean;
  /** Labels are too small to be drawn at the zoom reached. */
  labelsHidden: boolean;
}

/** Show every visible node, at most at full size and never below FIT_FLOOR. */
export function fitAll(cy: Core): FitOutcome {
  const fit = fitting(cy);
  if (!fit) return { whole: true, labelsHidden: false };
  const { box } = fit;
  const zoom = Math.max(FIT_FLOOR, fit.zoom);
  cy.viewport({
    zoom,
    pan: { x: (cy.width() - zoom * (box.x1 + box.x2)) / 2, y: (cy.height() - zoom * (box.y1 + box.y2)) / 2 },
  });
  return { whole: zoom === fit.zoom, labelsHidden: labelsHidden(cy) };
}

/** Whether Cytoscape draws no node labels at the current zoom. */
export function labelsHidden(cy: Core): boolean {
  return cy.zoom() * LABEL_FONT_SIZE < HIDDEN_LABEL_SIZE;
}

/** Shift along one axis so the graph leaves no empty margin on a side while cut on the other. */
function shiftToFill(low: number, high: number, size: number): number {
  if (high - low + 2 * PADDING <= size) return (size - (high - low)) / 2 - low;
  if (low > PADDING) return PADDING - low;
  if (high < size - PADDING) return size - PADDING - high;
  return 0;
}

/**
 * The opening view: the whole graph when its labels stay READABLE_LABEL pixels that way; else
 * full-size labels around `focus` (the centre, its first hops beside it), shifted so that no
 * side is left empty while the other is cut. The minimap shows the rest.
 */
export function focusOn(cy: Core, focus: string | null): void {
  cy.resize();
  const fit = fitting(cy);
  if (!fit) return;
  const node = focus ? cy.getElementById(focus) : null;
  if (fit.zoom >= READABLE_ZOOM || !node || node.empty()) {
    fitAll(cy);
    return;
  }
  const { box } = fit;
  const zoom = READABLE_ZOOM;
  const at = node.position();
  const pan = { x: cy.width() / 2 - zoom * at.x, y: cy.height() / 2 - zoom * at.y };
  pan.x += shiftToFill(zoom * box.x1 + pan.x, zoom * box.x2 + pan.x, cy.width());
  pan.y += shiftToFill(zoom * box.y1 + pan.y, zoom * box.y2 + pan.y, cy.height());
  cy.viewport({ zoom, pan });
}
