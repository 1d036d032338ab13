// How the lineage graph looks: shapes and colours per kind, and the classes exploring sets
// (paths highlighted, the rest dimmed, filtered nodes hidden, search matches ringed).

import type { StylesheetJson } from "cytoscape";

export const NODE_WIDTH = 170;
/** Height of a node box per label line, and the room around the lines. */
export const LINE_HEIGHT = 14;
export const NODE_PADDING = 12;
/** Column view: one row per field below a dataset's name, and room below the last. */
export const ROW_HEIGHT = 20;
export const ROW_GAP = 4;

/** Cytoscape takes a font family only in double quotes (single ones make it drop the value). */
const FONT = 'system-ui, "DejaVu Sans", sans-serif';
/** Node labels' font size at zoom 1, in pixels: the smallest size the UI opens a graph at. */
export const LABEL_FONT_SIZE = 11;
/** Below this rendered size Cytoscape does not draw a label at all. */
export const HIDDEN_LABEL_SIZE = 5;

export const STYLE: StylesheetJson = [
  {
    selector: "node",
    style: {
      label: "data(caption)",
      "font-size": LABEL_FONT_SIZE,
      "font-family": FONT,
      "text-valign": "center",
      "text-halign": "center",
      "text-wrap": "wrap",
      "text-max-width": `${NODE_WIDTH - 8}px`,
      "line-height": 1.2,
      width: "data(width)",
      height: "data(height)",
      "border-width": 1,
      color: "#10223a",
      "min-zoomed-font-size": HIDDEN_LABEL_SIZE,
    },
  },
  {
    selector: "node[kind = 'dataset']",
    style: { shape: "round-rectangle", "background-color": "#dbeafe", "border-color": "#3b82f6" },
  },
  {
    selector: "node[kind = 'dataset'][?rows]",
    style: { "text-valign": "top", "text-margin-y": "data(labelShift)" as unknown as number, "font-weight": "bold" },
  },
  {
    selector: "node[kind = 'job']",
    style: { shape: "cut-rectangle", "background-color": "#fde7c8", "border-color": "#d97706" },
  },
  {
    selector: "node[kind = 'workflow']",
    style: {
      shape: "cut-rectangle",
      "background-color": "#ede9fe",
      "border-color": "#7c3aed",
      "border-width": 3,
      "border-style": "double",
    },
  },
  {
    selector: "node[kind = 'field']",
    style: {
      shape: "rectangle",
      "background-color": "#ffffff",
      "border-color": "#bfdbfe",
      "font-size": LABEL_FONT_SIZE,
      "text-halign": "center",
      "text-wrap": "none",
      "z-index": 5,
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
  // The map (#/map): a group of datasets under one container; one that drills down is bolder.
  {
    selector: "node[kind = 'group']",
    style: { shape: "round-rectangle", "background-color": "#e0f2fe", "border-color": "#0369a1" },
  },
  { selector: "node[kind = 'group'][?deeper]", style: { "border-width": 3 } },
  {
    selector: "edge[flows]",
    style: {
      label: "data(caption)",
      "font-size": LABEL_FONT_SIZE,
      "font-family": FONT,
      "text-background-color": "#ffffff",
      "text-background-opacity": 1,
      "curve-style": "bezier",
    },
  },
  { selector: "node[?centre]", style: { "border-width": 4, "border-color": "#0f766e" } },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "curve-style": "taxi",
      "taxi-direction": "rightward",
      "taxi-turn": "50%",
      "line-color": "#94a3b8",
      "target-arrow-color": "#94a3b8",
      "target-arrow-shape": "triangle",
      "arrow-scale": 0.9,
    },
  },
  {
    selector: "edge[?field]",
    style: { "line-color": "#60a5fa", "target-arrow-color": "#60a5fa", width: 1.2, "z-index": 4 },
  },
  // Control flow (a job dependency): the job on the left runs before the one on the right.
  {
    selector: "edge[?control]",
    style: { "line-color": "#7c3aed", "target-arrow-color": "#7c3aed", "line-style": "dotted", width: 2 },
  },
  // A diff: added green, removed red and dashed, kept as is; highlighted paths still win.
  {
    selector: "edge.change-added",
    style: { "line-color": "#16a34a", "target-arrow-color": "#16a34a", width: 3 },
  },
  {
    selector: "edge.change-removed",
    style: { "line-color": "#dc2626", "target-arrow-color": "#dc2626", "line-style": "dashed", width: 3 },
  },
  { selector: "node.change-added", style: { "border-color": "#16a34a", "border-width": 3 } },
  { selector: "node.change-removed", style: { "border-color": "#dc2626", "border-width": 3, "border-style": "dashed" } },
  // Run lineage: a run, and a dataset version (a dataset as one run wrote it).
  { selector: "node[?runId]", style: { shape: "round-tag" } },
  { selector: "node[?version]", style: { "border-style": "double", "border-width": 3 } },
  { selector: ".dimmed", style: { opacity: 0.18 } },
  { selector: "node.upstream", style: { "border-color": "#2563eb", "border-width": 3 } },
  { selector: "node.downstream", style: { "border-color": "#c2410c", "border-width": 3 } },
  { selector: "node.selected", style: { "border-color": "#0f766e", "border-width": 5 } },
  {
    selector: "edge.upstream",
    style: { "line-color": "#2563eb", "target-arrow-color": "#2563eb", width: 2.5, "z-index": 9 },
  },
  {
    selector: "edge.downstream",
    style: { "line-color": "#c2410c", "target-arrow-color": "#c2410c", width: 2.5, "z-index": 9 },
  },
  { selector: "node.match", style: { "overlay-color": "#facc15", "overlay-opacity": 0.45, "overlay-padding": 6 } },
  { selector: ".filtered, .off-path", style: { display: "none" } },
];
