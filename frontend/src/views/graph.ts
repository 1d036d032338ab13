// The interactive lineage graph (DESIGN §4.2, §5): layered left to right with upstream on the
// left, controls for levels, direction, window, collapse and rollup, all held in the URL.

import cytoscape from "cytoscape";
import type { Core, ElementDefinition, StylesheetJson } from "cytoscape";
import dagre from "cytoscape-dagre";

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
import { errorText } from "./common";

cytoscape.use(dagre);

const DEFAULT_LEVELS = 3;
const COLLAPSE_DIMENSIONS = ["access", "run", "component"] as const;
/** Above this many elements, drawing trades polish for speed while panning and zooming. */
const LARGE_GRAPH = 400;
/** Up to this many nodes, layers are ranked with the best (and slowest) method. */
const EXACT_RANKING_NODES = 300;
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
      label: "data(label)",
      "font-size": 11,
      "font-family": "system-ui, sans-serif",
      "text-valign": "center",
      "text-halign": "center",
      "text-wrap": "ellipsis",
      "text-max-width": "124px",
      width: 136,
      height: 32,
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

function elements(graph: LineageGraph): ElementDefinition[] {
  return [
    ...graph.nodes.map((node) => ({ group: "nodes" as const, data: { ...node, label: label(node) } })),
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

function draw(
  container: HTMLElement,
  graph: LineageGraph,
  onPoint: (node: GraphNode | null) => void,
  onPick: (node: GraphNode) => void,
  timing: { route: string; requestedAt: number; receivedAt: number },
  onDrawn: (probe: GraphProbe) => void,
): Core {
  const large = graph.nodes.length + graph.edges.length > LARGE_GRAPH;
  const cy = cytoscape({
    container,
    elements: elements(graph),
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
  const layout = cy.layout({
    name: "dagre",
    rankDir: "LR",
    // Network simplex ranks best but grows steeply (tens of seconds at 1,000 nodes); longest
    // path is linear and, on lineage graphs, puts each node next to what it feeds.
    ranker: graph.nodes.length > EXACT_RANKING_NODES ? "longest-path" : "network-simplex",
    nodeSep: 12,
    rankSep: 44,
    edgeSep: 6,
    fit: true,
    padding: PADDING,
    animate: false,
  } as cytoscape.LayoutOptions);
  layout.one("layoutstop", () => {
    const laidOutAt = performance.now();
    focusCentre(cy);
    // The frame after this one is the first that shows the laid-out graph.
    requestAnimationFrame(() =>
      requestAnimationFrame(() =>
        onDrawn({
          cy,
          ...timing,
          laidOutAt,
          drawnAt: performance.now(),
          nodes: cy.nodes().length,
          edges: cy.edges().length,
        }),
      ),
    );
  });
  layout.run();
  return cy;
}

/** Shift along one axis so the graph leaves no empty margin on a side while cut on the other. */
function shiftToFill(low: number, high: number, size: number): number {
  if (high - low + 2 * PADDING <= size) return (size - (high - low)) / 2 - low;
  if (low > PADDING) return PADDING - low;
  if (high < size - PADDING) return size - PADDING - high;
  return 0;
}

/** A graph larger than the screen opens legible around its centre, not as a speck. */
function focusCentre(cy: Core): void {
  cy.fit(undefined, PADDING);
  const centre = cy.nodes("[?centre]");
  if (cy.zoom() >= READABLE_ZOOM || centre.empty()) return;
  cy.zoom(READABLE_ZOOM);
  cy.center(centre);
  const box = cy.elements().renderedBoundingBox();
  cy.panBy({
    x: shiftToFill(box.x1, box.x2, cy.width()),
    y: shiftToFill(box.y1, box.y2, cy.height()),
  });
}

function viewButtons(): HTMLElement {
  const fit = h("button", { type: "button", name: "fit" }, "Fit all");
  fit.addEventListener("click", () => current?.fit(undefined, PADDING));
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
  current = draw(
    canvas,
    graph,
    (node) => replace(panel, details(node)),
    (node) =>
      go("graph", {
        ...paramsObject(params),
        type: node.kind === "dataset" ? "dataset" : "job",
        ns: node.namespace,
        name: node.name,
      }),
    { route, requestedAt, receivedAt },
    (probe) => {
      window.__upstreamGraph = probe;
      replace(
        status,
        `${probe.nodes} nodes, ${probe.edges} edges — fetched in ${Math.round(receivedAt - requestedAt)} ms, ` +
          `drawn ${Math.round(probe.drawnAt - requestedAt)} ms after the request.`,
        graph.truncated ? h("strong", { class: "warn" }, " The server cut this graph at its node limit.") : null,
      );
      status.dataset.state = "drawn";
    },
  );
}
