// The interactive lineage graph (DESIGN §4.2, §5): layered left to right with upstream on the
// left, controls for levels, direction, window, collapse and rollup, all held in the URL.

import cytoscape from "cytoscape";
import type { Core, ElementDefinition, StylesheetJson } from "cytoscape";

import { api } from "../api";
import { h, notice, replace } from "../dom";
import {
  type Direction,
  type GraphNode,
  type LineageGraph,
  fromMarquez,
  fromRelations,
} from "../graph-model";
import { go, links, paramsObject, windowQuery } from "../route";
import { windowControl } from "../window-control";
import type { LayoutRequest, LayoutResponse } from "../layout-protocol";
import { errorText } from "./common";

/** The layout worker's bundle, named with its content hash at build time. */
declare const LAYOUT_WORKER_URL: string;

type Positions = LayoutResponse["positions"];

const DEFAULT_LEVELS = 3;
const COLLAPSE_DIMENSIONS = ["access", "run", "component"] as const;
/** Above this many elements, drawing trades polish for speed while panning and zooming. */
const LARGE_GRAPH = 400;
/** Up to this many nodes, layers are ranked with the best (and slowest) method. */
const EXACT_RANKING_NODES = 300;
const NODE_WIDTH = 136;
const NODE_HEIGHT = 32;
/** Letters of a label that fit a node box at the label's font size. */
const CAPTION_LETTERS = 20;
/** Room left around the graph when it is fitted to the canvas, in pixels. */
const PADDING = 24;
/** The smallest zoom at which node labels are still legible. */
const READABLE_ZOOM = 0.7;

/** What the browser tests read: the graph on screen and how long it took to get there. */
export interface GraphProbe {
  cy: Core;
  /** The URL hash this graph was drawn for. */
  route: string;
  requestedAt: number;
  receivedAt: number;
  /** When the layered layout had placed every node. */
  laidOutAt: number;
  drawnAt: number;
  nodes: number;
  edges: number;
}

declare global {
  interface Window {
    __upstreamGraph?: GraphProbe;
  }
}

const STYLE: StylesheetJson = [
  {
    selector: "node",
    style: {
      label: "data(caption)",
      "font-size": 11,
      "font-family": "system-ui, sans-serif",
      "text-valign": "center",
      "text-halign": "center",
      "text-wrap": "none",
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      "border-width": 1,
      color: "#10223a",
      "min-zoomed-font-size": 7,
    },
  },
  {
    selector: "node[kind = 'dataset']",
    style: { shape: "round-rectangle", "background-color": "#dbeafe", "border-color": "#3b82f6" },
  },
  {
    selector: "node[kind = 'job']",
    style: { shape: "hexagon", "background-color": "#fde7c8", "border-color": "#d97706" },
  },
  {
    selector: "node[kind = 'workflow']",
    style: {
      shape: "hexagon",
      "background-color": "#ede9fe",
      "border-color": "#7c3aed",
      "border-width": 3,
      "border-style": "double",
    },
  },
  {
    selector: "node[?temporary]",
    style: {
      "background-color": "#f3f4f6",
      "border-style": "dashed",
      "border-color": "#6b7280",
      "border-width": 2,
      color: "#4b5563",
    },
  },
  { selector: "node[?centre]", style: { "border-width": 4, "border-color": "#0f766e" } },
  { selector: "node:active, node.hover", style: { "overlay-opacity": 0.12 } },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "curve-style": "bezier",
      "line-color": "#94a3b8",
      "target-arrow-color": "#94a3b8",
      "target-arrow-shape": "triangle",
      "arrow-scale": 0.9,
    },
  },
];

function label(node: GraphNode): string {
  const prefix = node.kind === "workflow" ? "⧉ " : "";
  return node.temporary ? `${prefix}${node.name} (temporary)` : `${prefix}${node.name}`;
}

/**
 * The label cut to what fits the node box. Cut here once rather than by the renderer, which
 * measures a label letter by letter to place its ellipsis: seconds on a thousand nodes.
 */
function caption(text: string): string {
  const letters = [...text];
  return letters.length <= CAPTION_LETTERS ? text : `${letters.slice(0, CAPTION_LETTERS - 1).join("")}…`;
}

function elements(graph: LineageGraph, positions: Positions): ElementDefinition[] {
  return [
    ...graph.nodes.map((node) => ({
      group: "nodes" as const,
      data: { ...node, label: label(node), caption: caption(label(node)) },
      position: positions[node.id],
    })),
    ...graph.edges.map((edge) => ({ group: "edges" as const, data: { ...edge } })),
  ];
}

interface GraphSettings {
  type: "dataset" | "job";
  namespace: string;
  name: string;
  levels: number;
  direction: Direction;
  collapse: string[];
  rollup: boolean;
}

function settingsOf(params: URLSearchParams): GraphSettings | null {
  const namespace = params.get("ns");
  const name = params.get("name");
  if (!namespace || !name) return null;
  const levels = Number.parseInt(params.get("levels") ?? "", 10);
  const direction = params.get("direction");
  return {
    type: params.get("type") === "job" ? "job" : "dataset",
    namespace,
    name,
    levels: Number.isFinite(levels) && levels >= 1 ? levels : DEFAULT_LEVELS,
    direction: direction === "upstream" || direction === "downstream" ? direction : "both",
    collapse: (params.get("collapse") ?? "").split(",").filter((c) => c),
    rollup: params.get("rollup") === "workflow",
  };
}

async function fetchGraph(settings: GraphSettings, params: URLSearchParams): Promise<LineageGraph> {
  const centre = { namespace: settings.namespace, name: settings.name };
  if (settings.type === "dataset") {
    const response = await api.datasetLineage(settings.namespace, settings.name, {
      ...windowQuery(params),
      levels: settings.levels,
      direction: settings.direction,
      collapse: settings.collapse,
      rollup: settings.rollup ? "workflow" : null,
    });
    return fromRelations(response, centre);
  }
  // A job-centred graph comes from the Marquez graph; one level is job → dataset → job.
  const nodeId = `job:${settings.namespace}:${settings.name}`;
  const hops = settings.levels * 2;
  const response = await api.nodeLineage(nodeId, hops);
  return fromMarquez(response, nodeId, settings.direction, hops);
}

function controls(settings: GraphSettings, params: URLSearchParams): HTMLElement {
  const change = (changes: Record<string, string>) => go("graph", { ...paramsObject(params), ...changes });
  const levels = h("input", {
    type: "number",
    name: "levels",
    min: 1,
    max: 100,
    value: settings.levels,
    "aria-label": "Levels",
  });
  levels.addEventListener("change", () => {
    const value = Number.parseInt(levels.value, 10);
    if (Number.isFinite(value) && value >= 1) change({ levels: String(value) });
  });
  const direction = h(
    "select",
    { name: "direction", "aria-label": "Direction" },
    ["both", "upstream", "downstream"].map((value) =>
      h("option", { value, selected: value === settings.direction }, value),
    ),
  );
  direction.addEventListener("change", () => change({ direction: direction.value }));
  const datasetOnly = settings.type === "job";
  const collapse = COLLAPSE_DIMENSIONS.map((dimension) => {
    const box = h("input", {
      type: "checkbox",
      name: `collapse-${dimension}`,
      checked: settings.collapse.includes(dimension),
      disabled: datasetOnly,
    });
    box.addEventListener("change", () => {
      const chosen = COLLAPSE_DIMENSIONS.filter((d) =>
        d === dimension ? box.checked : settings.collapse.includes(d),
      );
      change({ collapse: chosen.join(",") });
    });
    return h("label", { class: "check" }, box, dimension);
  });
  const rollup = h("input", {
    type: "checkbox",
    name: "rollup",
    checked: settings.rollup,
    disabled: datasetOnly,
  });
  rollup.addEventListener("change", () => change({ rollup: rollup.checked ? "workflow" : "" }));
  const window = windowControl(params, change);
  if (datasetOnly) window.querySelectorAll("select, input").forEach((el) => el.setAttribute("disabled", ""));
  return h(
    "form",
    { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
    h("label", { class: "control" }, "Levels ", levels),
    h("label", { class: "control" }, "Direction ", direction),
    window,
    h("fieldset", { class: "control" }, h("legend", {}, "Collapse"), collapse),
    h("label", { class: "control check" }, rollup, "Roll up workflows"),
    datasetOnly
      ? h("span", { class: "muted" }, "Window, collapse and rollup apply to dataset-centred graphs.")
      : null,
  );
}

function details(node: GraphNode | null): HTMLElement {
  if (!node) return h("p", { class: "muted" }, "Point at a node to see it; click it to centre the graph on it.");
  const page =
    node.kind === "dataset" ? links.dataset(node.namespace, node.name) : links.job(node.namespace, node.name);
  return h(
    "dl",
    {},
    h("dt", {}, "Type"),
    h("dd", {}, node.kind + (node.temporary ? " (temporary to its workflow run)" : "")),
    h("dt", {}, "Namespace"),
    h("dd", { class: "wrap" }, node.namespace),
    h("dt", {}, "Name"),
    h("dd", { class: "wrap" }, node.name),
    h(
      "dd",
      {},
      h("a", { href: page }, "Open page"),
      node.kind === "dataset" ? [" · ", h("a", { href: links.fields(node.namespace, node.name) }, "Field lineage")] : null,
    ),
  );
}

let pendingLayout: Worker | null = null;

/**
 * Place the nodes in layers, left to right, in a worker so the page stays responsive. A newer
 * request cancels an older one, whose promise then never settles.
 */
function layOut(graph: LineageGraph): Promise<Positions> {
  pendingLayout?.terminate();
  const worker = new Worker(LAYOUT_WORKER_URL);
  pendingLayout = worker;
  const request: LayoutRequest = {
    nodes: graph.nodes.map((node) => node.id),
    edges: graph.edges.map((edge) => [edge.source, edge.target]),
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    nodeSep: 12,
    rankSep: 44,
    // Network simplex ranks best but grows steeply (tens of seconds at 1,000 nodes); longest
    // path is linear and, on lineage graphs, puts each node next to what it feeds.
    ranker: graph.nodes.length > EXACT_RANKING_NODES ? "longest-path" : "network-simplex",
  };
  return new Promise((resolve, reject) => {
    const finish = () => {
      worker.terminate();
      if (pendingLayout === worker) pendingLayout = null;
    };
    worker.onmessage = (event: MessageEvent<LayoutResponse>) => {
      finish();
      resolve(event.data.positions);
    };
    worker.onerror = (event) => {
      finish();
      reject(new Error(`the layout failed: ${event.message}`));
    };
    worker.postMessage(request);
  });
}

function draw(
  container: HTMLElement,
  graph: LineageGraph,
  positions: Positions,
  onPoint: (node: GraphNode | null) => void,
  onPick: (node: GraphNode) => void,
): Core {
  const large = graph.nodes.length + graph.edges.length > LARGE_GRAPH;
  const cy = cytoscape({
    container,
    elements: elements(graph, positions),
    style: STYLE,
    minZoom: 0.05,
    maxZoom: 3,
    textureOnViewport: large,
    hideEdgesOnViewport: large,
    pixelRatio: large ? 1 : "auto",
    layout: { name: "preset" },
  });
  cy.on("mouseover", "node", (event) => {
    event.target.addClass("hover");
    onPoint(event.target.data() as GraphNode);
  });
  cy.on("mouseout", "node", (event) => event.target.removeClass("hover"));
  cy.on("tap", "node", (event) => onPick(event.target.data() as GraphNode));
  focusCentre(cy);
  return cy;
}

/** Shift along one axis so the graph leaves no empty margin on a side while cut on the other. */
function shiftToFill(low: number, high: number, size: number): number {
  if (high - low + 2 * PADDING <= size) return (size - (high - low)) / 2 - low;
  if (low > PADDING) return PADDING - low;
  if (high < size - PADDING) return size - PADDING - high;
  return 0;
}

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * The nodes' extent, from their positions and the one box size every node has: Cytoscape's
 * own bounding boxes measure every label and edge, which takes seconds on a large graph.
 */
function extent(cy: Core): Box {
  const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
  cy.nodes().forEach((node) => {
    const { x, y } = node.position();
    box.x1 = Math.min(box.x1, x - NODE_WIDTH / 2);
    box.x2 = Math.max(box.x2, x + NODE_WIDTH / 2);
    box.y1 = Math.min(box.y1, y - NODE_HEIGHT / 2);
    box.y2 = Math.max(box.y2, y + NODE_HEIGHT / 2);
  });
  return box;
}

/** Show the whole graph, at most at full size. */
function fitAll(cy: Core, box: Box = extent(cy)): void {
  const zoom = Math.min(
    1,
    (cy.width() - 2 * PADDING) / (box.x2 - box.x1),
    (cy.height() - 2 * PADDING) / (box.y2 - box.y1),
  );
  cy.viewport({
    zoom,
    pan: {
      x: (cy.width() - zoom * (box.x1 + box.x2)) / 2,
      y: (cy.height() - zoom * (box.y1 + box.y2)) / 2,
    },
  });
}

/** A graph larger than the screen opens legible around its centre, not as a speck. */
function focusCentre(cy: Core): void {
  const box = extent(cy);
  fitAll(cy, box);
  const centre = cy.nodes("[?centre]");
  if (cy.zoom() >= READABLE_ZOOM || centre.empty()) return;
  const zoom = READABLE_ZOOM;
  const at = centre.first().position();
  const pan = { x: cy.width() / 2 - zoom * at.x, y: cy.height() / 2 - zoom * at.y };
  pan.x += shiftToFill(zoom * box.x1 + pan.x, zoom * box.x2 + pan.x, cy.width());
  pan.y += shiftToFill(zoom * box.y1 + pan.y, zoom * box.y2 + pan.y, cy.height());
  cy.viewport({ zoom, pan });
}

function viewButtons(): HTMLElement {
  const fit = h("button", { type: "button", name: "fit" }, "Fit all");
  fit.addEventListener("click", () => current && fitAll(current));
  const centre = h("button", { type: "button", name: "centre" }, "Back to centre");
  centre.addEventListener("click", () => current && focusCentre(current));
  return h("span", { class: "view-buttons" }, fit, centre);
}

let current: Core | null = null;

/** Render the graph view for the route's parameters into `root`. */
export async function renderGraph(root: HTMLElement, params: URLSearchParams): Promise<void> {
  current?.destroy();
  current = null;
  delete window.__upstreamGraph;
  const settings = settingsOf(params);
  if (!settings) {
    replace(root, notice("Pick a dataset or a job first: search for it above, then open its graph."));
    return;
  }
  const status = h("p", { class: "status", id: "graph-status" }, "Loading lineage…");
  const panel = h("aside", { class: "graph-panel", id: "graph-details" }, details(null));
  const canvas = h("div", { class: "graph-canvas", id: "graph", "aria-label": "Lineage graph" });
  const kind = settings.type === "dataset" ? "Dataset" : "Job";
  const page =
    settings.type === "dataset"
      ? links.dataset(settings.namespace, settings.name)
      : links.job(settings.namespace, settings.name);
  replace(
    root,
    h(
      "section",
      { class: "graph-view" },
      h(
        "header",
        { class: "page-head" },
        h("h1", {}, h("span", { class: `badge badge-${settings.type}` }, kind), " ", h("a", { href: page }, settings.name)),
        h("p", { class: "muted wrap" }, settings.namespace),
      ),
      controls(settings, params),
      h("div", { class: "graph-body" }, canvas, panel),
      h(
        "p",
        { class: "legend muted" },
        h("span", { class: "key key-dataset" }, "dataset"),
        h("span", { class: "key key-job" }, "job"),
        h("span", { class: "key key-workflow" }, "workflow"),
        h("span", { class: "key key-temporary" }, "temporary dataset"),
        "Upstream is on the left. Click a node to centre the graph on it; scroll to zoom.",
        viewButtons(),
      ),
      status,
    ),
  );
  const route = location.hash;
  const requestedAt = performance.now();
  let graph: LineageGraph;
  try {
    graph = await fetchGraph(settings, params);
  } catch (error) {
    replace(status, errorText(error));
    status.classList.add("notice-error");
    return;
  }
  const receivedAt = performance.now();
  if (!canvas.isConnected) return; // the user moved on while the request ran
  if (!graph.nodes.length) {
    replace(status, "No lineage in this window.");
    return;
  }
  const centre = graph.nodes.find((node) => node.centre) ?? null;
  replace(panel, details(centre));
  replace(status, `Laying out ${graph.nodes.length} nodes…`);
  let positions: Positions;
  try {
    positions = await layOut(graph);
  } catch (error) {
    replace(status, errorText(error));
    status.classList.add("notice-error");
    return;
  }
  const laidOutAt = performance.now();
  if (!canvas.isConnected) return;
  const cy = draw(
    canvas,
    graph,
    positions,
    (node) => replace(panel, details(node)),
    (node) =>
      go("graph", {
        ...paramsObject(params),
        type: node.kind === "dataset" ? "dataset" : "job",
        ns: node.namespace,
        name: node.name,
      }),
  );
  current = cy;
  // The frame after the next is the first that shows the graph.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const probe: GraphProbe = {
        cy,
        route,
        requestedAt,
        receivedAt,
        laidOutAt,
        drawnAt: performance.now(),
        nodes: cy.nodes().length,
        edges: cy.edges().length,
      };
      window.__upstreamGraph = probe;
      replace(
        status,
        `${probe.nodes} nodes, ${probe.edges} edges — fetched in ${Math.round(receivedAt - requestedAt)} ms, ` +
          `laid out in ${Math.round(laidOutAt - receivedAt)} ms, ` +
          `drawn ${Math.round(probe.drawnAt - requestedAt)} ms after the request.`,
        graph.truncated ? h("strong", { class: "warn" }, " The server cut this graph at its node limit.") : null,
      );
      status.dataset.state = "drawn";
    }),
  );
}
