// The interactive lineage graph (design §4.2, §5): layered left to right with upstream on the
// left for every direction; controls for levels, direction, window, collapse, rollup, column
// view and namespaces, all held in the URL; and exploring in place — paths of a node
// highlighted, a node expanded or collapsed by one hop, filters, search, paths between two
// nodes — without fetching or laying out the graph again except for what changed.

import type { Core } from "cytoscape";

import { api, type ColumnGraph, type ColumnNode } from "../api";
import { openCanvas } from "../canvas";
import { type Columns, columnsOf } from "../columns";
import { counted, h, notice, replace } from "../dom";
import { FIT_FLOOR, drawing, focusOn, fitAll, placed } from "../graph-canvas";
import { KINDS, applyFilters, clearHighlight, focusPaths, highlight, search } from "../graph-explore";
import {
  Adjacency,
  type Direction,
  type GraphNode,
  type LineageGraph,
  collapsed,
  fromDiff,
  fromRelations,
  merged,
} from "../graph-model";
import { fullLabel } from "../labels";
import { layOut } from "../layout";
import { ALL_TIME, go, historyQuery, links, note, paramsObject } from "../route";
import { asOfControl, instantInput, windowControl } from "../window-control";
import { errorText, namespaceLabel } from "./common";
import { latestRunHint } from "./latest-run";

const DEFAULT_LEVELS = 3;
const COLLAPSE_DIMENSIONS = ["access", "run", "component"] as const;
/** Two taps on one node this close together are a double click. */
const DOUBLE_CLICK_MS = 400;

/** What the browser tests read: the graph on screen and how long it took to get there. */
export interface GraphProbe {
  cy: Core;
  /** The URL hash this graph was drawn for. */
  route: string;
  requestedAt: number;
  /** When the first levels were on screen (the whole graph, when it came first). */
  firstPaintAt: number;
  receivedAt: number;
  /** When the layered layout had placed every node of the whole graph. */
  laidOutAt: number;
  drawnAt: number;
  nodes: number;
  edges: number;
  /** False while only the first levels are drawn. */
  complete: boolean;
}

declare global {
  interface Window {
    __upstreamGraph?: GraphProbe;
  }
}

interface GraphSettings {
  type: "dataset" | "job";
  namespace: string;
  name: string;
  levels: number;
  direction: Direction;
  collapse: string[];
  rollup: boolean;
  columns: boolean;
  namespaces: boolean;
  hideKinds: Set<string>;
  hideNs: Set<string>;
  find: string;
  from: string | null;
  to: string | null;
  compare: Compare;
}

/** What a dataset graph is compared with (design §4.5): nothing, the window just before its
 * own, another window (`compareStart`..`compareEnd`), or its lineage at an earlier time
 * (`against`, the graph's own being `asOf` or now). */
type Compare = "" | "previous" | "window" | "time";
const COMPARE_CHOICES: [Compare, string][] = [
  ["", "nothing"],
  ["previous", "the window before"],
  ["window", "another window…"],
  ["time", "an earlier time…"],
];

const listParam = (params: URLSearchParams, key: string) =>
  (params.get(key) ?? "").split(",").filter((part) => part);

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
    collapse: listParam(params, "collapse"),
    rollup: params.get("rollup") === "workflow",
    columns: params.get("columns") === "on",
    namespaces: params.get("namespaces") === "on",
    hideKinds: new Set(listParam(params, "hideKinds")),
    // Namespaces hold commas (`postgres://h:5432,replica`), so they are a JSON list.
    hideNs: new Set(parseList(params.get("hideNs"))),
    find: params.get("find") ?? "",
    from: params.get("from"),
    to: params.get("to"),
    compare: COMPARE_CHOICES.find(([value]) => value && value === params.get("compare"))?.[0] ?? "",
  };
}

function parseList(text: string | null): string[] {
  if (!text) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
  } catch {
    return [];
  }
}

interface Target {
  kind: "dataset" | "job";
  namespace: string;
  name: string;
}

/** The lineage of a dataset or a job with the graph's window, collapse and rollup. */
async function lineageOf(
  target: Target,
  params: URLSearchParams,
  settings: GraphSettings,
  levels: number,
  direction: Direction,
): Promise<LineageGraph> {
  const query = {
    ...historyQuery(params),
    levels,
    direction,
    collapse: settings.collapse,
    rollup: settings.rollup ? "workflow" : null,
  };
  const response =
    target.kind === "dataset"
      ? await api.datasetLineage(target.namespace, target.name, query)
      : await api.jobLineage(target.namespace, target.name, query);
  return fromRelations(response, { kind: settings.type, namespace: settings.namespace, name: settings.name });
}

/** The centre dataset's lineage diff as one graph, and what it compared, in words. */
async function diffOf(params: URLSearchParams, settings: GraphSettings): Promise<{ graph: LineageGraph; sides: string }> {
  const { start, end, asOf } = historyQuery(params);
  const shared = {
    levels: settings.levels,
    direction: settings.direction,
    collapse: settings.collapse,
    rollup: settings.rollup ? "workflow" : null,
  };
  const windows = (from: string | null) => ({ ...shared, to: `${start}..${end}`, from });
  const query =
    settings.compare === "time"
      ? { ...shared, start, end, asOf: asOf ?? "now", against: params.get("against") }
      : comparesPrevious(settings, params)
        ? windows(null)
        : windows(`${params.get("compareStart")}..${params.get("compareEnd")}`);
  const diff = await api.lineageDiff(settings.namespace, settings.name, query);
  const at = (seconds: number) => new Date(seconds * 1000).toLocaleString();
  const side = (s: { start: number; end: number; asOf?: string }) =>
    `${at(s.start)} – ${at(s.end)}${s.asOf ? ` as of ${new Date(s.asOf).toLocaleString()}` : ""}`;
  const graph = fromDiff(diff, { kind: "dataset", namespace: settings.namespace, name: settings.name });
  // The API compares two windows as they are now: an as-of time is for comparing two times.
  const now = asOf && settings.compare !== "time" ? " (windows as they are now: As of compares times under “an earlier time…”)" : "";
  return { graph, sides: `${side(diff.to)} against ${side(diff.from)}${now}` };
}

/** Whether the comparison is with the window just before the graph's own (also what "another
 * window…" compares with until both of its dates are set). */
function comparesPrevious(settings: GraphSettings, params: URLSearchParams): boolean {
  if (settings.compare === "previous") return true;
  return settings.compare === "window" && !(params.get("compareStart") && params.get("compareEnd"));
}

function fieldGraphOf(target: Target, levels: number): Promise<ColumnGraph> {
  const kind = target.kind === "dataset" ? "dataset" : "job";
  // One level of lineage is one job between datasets: one field edge.
  return api.columnLineage(`${kind}:${target.namespace}:${target.name}`, levels + 1);
}

/** A field graph with the nodes and edges of another added. */
function mergedFields(base: ColumnGraph, extra: ColumnGraph): ColumnGraph {
  const byId = new Map<string, ColumnNode>(base.graph.map((node) => [node.id, node]));
  for (const node of extra.graph) {
    const known = byId.get(node.id);
    if (!known) {
      byId.set(node.id, node);
      continue;
    }
    const seen = new Set(known.outEdges.map((edge) => `${edge.origin}\n${edge.destination}`));
    const added = node.outEdges.filter((edge) => !seen.has(`${edge.origin}\n${edge.destination}`));
    byId.set(node.id, { ...known, outEdges: [...known.outEdges, ...added] });
  }
  return { graph: [...byId.values()] };
}

function targetOf(node: GraphNode): Target {
  return { kind: node.kind === "dataset" ? "dataset" : "job", namespace: node.namespace, name: node.name };
}

// ---- controls -------------------------------------------------------------------------------

function controls(settings: GraphSettings, params: URLSearchParams): HTMLElement {
  const change = (changes: Record<string, string>) => go("graph", { ...paramsObject(params), ...changes });
  const levels = h("input", { type: "number", name: "levels", min: 1, max: 100, value: settings.levels, "aria-label": "Levels" });
  levels.addEventListener("change", () => {
    const value = Number.parseInt(levels.value, 10);
    if (Number.isFinite(value) && value >= 1) change({ levels: String(value) });
  });
  const direction = h(
    "select",
    { name: "direction", "aria-label": "Direction" },
    ["both", "upstream", "downstream"].map((value) => h("option", { value, selected: value === settings.direction }, value)),
  );
  direction.addEventListener("change", () => change({ direction: direction.value }));
  const collapse = COLLAPSE_DIMENSIONS.map((dimension) => {
    const box = h("input", { type: "checkbox", name: `collapse-${dimension}`, checked: settings.collapse.includes(dimension) });
    box.addEventListener("change", () => {
      const chosen = COLLAPSE_DIMENSIONS.filter((d) => (d === dimension ? box.checked : settings.collapse.includes(d)));
      change({ collapse: chosen.join(",") });
    });
    return h("label", { class: "check" }, box, dimension);
  });
  const toggle = (name: string, checked: boolean, text: string, on: string) => {
    const box = h("input", { type: "checkbox", name, checked });
    box.addEventListener("change", () => change({ [name]: box.checked ? on : "" }));
    return h("label", { class: "control check" }, box, text);
  };
  return h(
    "form",
    { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
    h("label", { class: "control" }, "Levels ", levels),
    h("label", { class: "control" }, "Direction ", direction),
    windowControl(params, change),
    asOfControl(params, change),
    settings.type === "dataset" ? compareControl(settings, params, change) : null,
    h("fieldset", { class: "control" }, h("legend", {}, "Collapse"), collapse),
    toggle("rollup", settings.rollup, "Roll up workflows", "workflow"),
    toggle("columns", settings.columns, "Columns", "on"),
    toggle("namespaces", settings.namespaces, "Namespaces", "on"),
  );
}

/** "Compare with": a choice, and the dates the choice needs. */
function compareControl(
  settings: GraphSettings,
  params: URLSearchParams,
  change: (changes: Record<string, string>) => void,
): HTMLElement {
  const select = h(
    "select",
    { name: "compare", "aria-label": "Compare with" },
    COMPARE_CHOICES.map(([value, text]) =>
      h("option", { value, selected: value === settings.compare, disabled: value === "previous" && params.get("window") === ALL_TIME }, text),
    ),
  );
  select.addEventListener("change", () => change({ compare: select.value }));
  const dates =
    settings.compare === "window"
      ? [
          instantInput("compareStart", "Compared window start", params.get("compareStart"), "×", (iso) => change({ compareStart: iso })),
          " – ",
          instantInput("compareEnd", "Compared window end", params.get("compareEnd"), "×", (iso) => change({ compareEnd: iso })),
        ]
      : settings.compare === "time"
        ? instantInput("against", "Earlier time", params.get("against"), "×", (iso) => change({ against: iso }))
        : null;
  return h("label", { class: "control" }, "Compare with ", select, dates);
}

// ---- the view -------------------------------------------------------------------------------

/** The nodes and edges one side's expansions of a node added. */
interface Expansion {
  nodes: Set<string>;
  edges: Set<string>;
}

const expansionKey = (id: string, direction: "upstream" | "downstream") => JSON.stringify([id, direction]);

/** What `after` has that `before` had not, with what `earlier` expansions of the same side added. */
function addedBy(before: LineageGraph, after: LineageGraph, earlier?: Expansion): Expansion {
  const nodes = new Set(before.nodes.map((node) => node.id));
  const edges = new Set(before.edges.map((edge) => edge.id));
  return {
    nodes: new Set([...(earlier?.nodes ?? []), ...after.nodes.filter((node) => !nodes.has(node.id)).map((node) => node.id)]),
    edges: new Set([...(earlier?.edges ?? []), ...after.edges.filter((edge) => !edges.has(edge.id)).map((edge) => edge.id)]),
  };
}

/** One drawn graph and what the user did to it since it was fetched. */
class GraphSession {
  graph: LineageGraph = { nodes: [], edges: [], truncated: false };
  fields: ColumnGraph | null = null;
  columns: Columns | null = null;
  cy: Core | null = null;
  adjacency = new Adjacency([]);
  fieldAdjacency = new Adjacency([]);
  selected: string | null = null;
  pathStart: string | null = null;
  onPath: Set<string> | null = null;
  /** Bumped by every drawing; a layout that finishes after a newer one started is dropped. */
  generation = 0;
  /** Drawing a lineage diff rather than one answer. */
  comparing = false;
  /** What each "+ upstream"/"+ downstream" added, by node and side, for "−" to take back. */
  expansions = new Map<string, Expansion>();

  constructor(
    readonly settings: GraphSettings,
    readonly params: URLSearchParams,
    readonly canvas: HTMLElement,
    readonly panel: HTMLElement,
    readonly explore: HTMLElement,
    readonly status: HTMLElement,
  ) {}

  centre(): string | null {
    return this.graph.nodes.find((node) => node.centre)?.id ?? null;
  }

  node(id: string): GraphNode | undefined {
    return this.graph.nodes.find((node) => node.id === id);
  }

  /** Lay out and draw `graph`; `anchor` keeps that node where it was on screen. */
  async draw(graph: LineageGraph, anchor: string | null = null): Promise<Core | null> {
    const generation = ++this.generation;
    this.graph = graph;
    this.columns = this.fields ? columnsOf(graph, this.fields) : null;
    this.adjacency = new Adjacency(graph.edges);
    this.fieldAdjacency = new Adjacency(this.columns?.edges ?? []);
    const plan = drawing(graph, this.columns, this.settings.namespaces);
    const positions = await layOut(plan.layoutNodes, plan.layoutEdges);
    if (generation !== this.generation || !this.canvas.isConnected) return null;
    const at = placed(plan, positions);
    const elements = plan.elements.map((element) => ({ ...element, position: at[String(element.data.id)] }));
    const before = anchor && this.cy ? this.cy.getElementById(anchor).renderedPosition() : null;
    if (!this.cy) {
      this.cy = openCanvas(this.canvas, elements);
      this.wire(this.cy);
      focusOn(this.cy, this.centre());
    } else {
      const cy = this.cy;
      cy.batch(() => {
        cy.elements().remove();
        cy.add(elements);
      });
      const node = anchor ? cy.getElementById(anchor) : null;
      if (before && node?.nonempty()) {
        const now = node.renderedPosition();
        cy.panBy({ x: before.x - now.x, y: before.y - now.y });
      } else {
        focusOn(cy, this.centre());
      }
    }
    this.restoreExploring();
    return this.cy;
  }

  private wire(cy: Core): void {
    cy.on("mouseover", "node", (event) => {
      if (this.selected || this.pathStart) return;
      this.light(event.target.id());
      this.show(event.target.id());
    });
    cy.on("mouseout", "node", () => {
      if (!this.selected && !this.pathStart) clearHighlight(cy);
    });
    // A double click is two taps on the same node: Cytoscape's own dbltap also pairs taps on
    // two different nodes, and re-centred the graph when one node was picked after another.
    // The tap that picks the far end of paths is no half of a double click: selecting that
    // node again at once (after "Show the whole graph") must not re-centre the graph.
    let last = { id: "", at: 0 };
    cy.on("tap", "node", (event) => {
      const id: string = event.target.id();
      const now = performance.now();
      const endsPaths = this.pathStart !== null;
      const double = !endsPaths && last.id === id && now - last.at < DOUBLE_CLICK_MS;
      last = endsPaths ? { id: "", at: 0 } : { id, at: now };
      const node = this.node(event.target.data("dataset") ?? id);
      if (double && node && !this.pathStart) this.recentre(node);
      else this.pick(id);
    });
    cy.on("tap", (event) => {
      if (event.target === cy) this.select(null);
    });
  }

  private light(id: string): void {
    if (!this.cy) return;
    const isField = this.cy.getElementById(id).data("kind") === "field";
    highlight(this.cy, id, isField ? this.fieldAdjacency : this.adjacency);
  }

  private pick(id: string): void {
    if (this.pathStart) {
      this.focusBetween(this.pathStart, id);
      return;
    }
    this.select(id);
  }

  select(id: string | null): void {
    this.selected = id;
    note({ selected: id });
    if (!this.cy) return;
    if (id && this.cy.getElementById(id).nonempty()) {
      this.openPanel();
      this.light(id);
      this.show(id);
    } else {
      this.selected = null;
      clearHighlight(this.cy);
      this.show(null);
    }
  }

  /** A node picked shows in the side panel, so the panel opens if it was closed. */
  private openPanel(): void {
    const body = this.panel.parentElement;
    const toggle = document.querySelector<HTMLElement>("button[name=toggle-panel]");
    if (body && toggle) showPanel(body, toggle, true);
  }

  recentre(node: GraphNode): void {
    go("graph", {
      ...paramsObject(this.params),
      type: node.kind === "dataset" ? "dataset" : "job",
      ns: node.namespace,
      name: node.name,
      selected: "",
      from: "",
      to: "",
    });
  }

  /** The side panel for a node, a field row, or nothing. */
  show(id: string | null): void {
    const element = id && this.cy ? this.cy.getElementById(id) : null;
    if (!element || element.empty()) {
      replace(
        this.panel,
        h(
          "p",
          { class: "muted" },
          "Point at a node to see its paths; click it to keep them and to expand or collapse it; double-click to centre the graph on it.",
        ),
      );
      return;
    }
    if (element.data("kind") === "field") {
      const dataset = this.node(element.data("dataset") as string);
      replace(
        this.panel,
        h(
          "dl",
          {},
          h("dt", {}, "Field"),
          h("dd", { class: "wrap" }, element.data("field") as string),
          element.data("type") ? [h("dt", {}, "Type"), h("dd", { class: "wrap" }, element.data("type") as string)] : null,
          h("dt", {}, "Dataset"),
          h("dd", { class: "wrap" }, dataset ? fullLabel(dataset) : ""),
          h("dt", {}, "Namespace"),
          h("dd", { class: "wrap" }, dataset?.namespace ?? ""),
          dataset
            ? h("dd", {}, h("a", { href: links.fields(dataset.namespace, dataset.name, element.data("field") as string) }, "Field lineage"))
            : null,
        ),
      );
      return;
    }
    const node = this.node(element.id());
    if (!node) return;
    const page = node.kind === "dataset" ? links.dataset(node.namespace, node.name) : links.job(node.namespace, node.name);
    const button = (name: string, text: string, action: () => void) => {
      const b = h("button", { type: "button", name }, text);
      b.addEventListener("click", action);
      return b;
    };
    replace(
      this.panel,
      h(
        "dl",
        {},
        h("dt", {}, "Type"),
        h("dd", {}, node.kind + (node.temporary ? " (temporary to its workflow run)" : "")),
        h("dt", {}, "Namespace"),
        h("dd", { class: "wrap" }, namespaceLabel(node.namespace)),
        h("dt", {}, "Name"),
        h("dd", { class: "wrap", id: "panel-name" }, fullLabel(node)),
        h(
          "dd",
          {},
          h("a", { href: page }, "Open page"),
          node.kind === "dataset" ? [" · ", h("a", { href: links.fields(node.namespace, node.name) }, "Field lineage")] : null,
        ),
      ),
      h(
        "div",
        { class: "panel-actions" },
        // A compared graph is two answers at once: one more hop of one of them would mislead.
        this.comparing ? null : button("expand-upstream", "+ upstream", () => void this.expand(node, "upstream")),
        this.comparing ? null : button("expand-downstream", "+ downstream", () => void this.expand(node, "downstream")),
        button("collapse-upstream", "− upstream", () => void this.collapse(node, "upstream")),
        button("collapse-downstream", "− downstream", () => void this.collapse(node, "downstream")),
        button("paths-to", "Paths to…", () => this.startPaths(node.id)),
        button("recentre", "Centre here", () => this.recentre(node)),
      ),
    );
  }

  /** One more hop from `node`: a dataset's jobs on that side and their datasets; a job's
   * datasets on that side. Drawn in place, the node kept where it was. */
  async expand(node: GraphNode, direction: "upstream" | "downstream"): Promise<void> {
    replace(this.status, `Expanding ${fullLabel(node)} ${direction}…`);
    try {
      const target = targetOf(node);
      let extra = await lineageOf(target, this.params, this.settings, 1, direction);
      if (target.kind === "job") {
        const own = extra.edges.filter((edge) => edge.source === node.id || edge.target === node.id);
        const ids = new Set(own.flatMap((edge) => [edge.source, edge.target]));
        extra = { ...extra, nodes: extra.nodes.filter((n) => ids.has(n.id)), edges: own };
      }
      if (this.fields) this.fields = mergedFields(this.fields, await fieldGraphOf(target, 1));
      const before = this.graph;
      const after = merged(before, extra);
      const key = expansionKey(node.id, direction);
      const added = addedBy(before, after, this.expansions.get(key));
      this.expansions.set(key, added);
      await this.draw(after, node.id);
      this.reportDrawn(`${counted(after.nodes.length - before.nodes.length, "node")} added ${direction} of ${fullLabel(node)}.`);
    } catch (error) {
      replace(this.status, errorText(error));
    }
  }

  /** Take away what lies only behind `node` on that side (what the centre reaches another
   * way stays), and whatever "+" on that side of it added: "−" undoes "+" even where what it
   * added joins the rest of the graph another way. */
  async collapse(node: GraphNode, direction: "upstream" | "downstream"): Promise<void> {
    const key = expansionKey(node.id, direction);
    const expansion = this.expansions.get(key);
    this.expansions.delete(key);
    const centre = this.centre();
    const gone = collapsed(this.adjacency, node.id, direction, centre);
    for (const id of expansion?.nodes ?? []) if (id !== centre && id !== node.id) gone.add(id);
    const cut = expansion?.edges ?? new Set<string>();
    if (!gone.size && !cut.size) {
      replace(this.status, `Nothing lies only ${direction} of ${fullLabel(node)}.`);
      return;
    }
    const graph = {
      ...this.graph,
      nodes: this.graph.nodes.filter((n) => !gone.has(n.id)),
      edges: this.graph.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target) && !cut.has(e.id)),
    };
    await this.draw(graph, node.id);
    this.reportDrawn(`${counted(gone.size, "node")} ${direction} of ${fullLabel(node)} collapsed.`);
  }

  startPaths(id: string): void {
    this.pathStart = id;
    const node = this.node(id);
    replace(this.status, `Click the other end of the paths from ${node ? fullLabel(node) : id}.`);
  }

  focusBetween(a: string, b: string): void {
    this.pathStart = null;
    const onPath = this.adjacency.between(a, b);
    const names = [a, b].map((id) => {
      const node = this.node(id);
      return node ? fullLabel(node) : id;
    });
    if (!onPath.size) {
      replace(this.status, `No path joins ${names[0]} and ${names[1]} in this graph.`);
      return;
    }
    this.onPath = onPath;
    note({ from: a, to: b });
    this.restoreExploring();
    replace(this.status, `Only the ${counted(onPath.size, "node")} on paths between ${names[0]} and ${names[1]} are shown.`);
  }

  clearPaths(): void {
    this.onPath = null;
    this.pathStart = null;
    note({ from: "", to: "" });
    this.restoreExploring();
  }

  /** Filters, search, path focus and selection as the URL says, after any drawing. */
  restoreExploring(): void {
    const cy = this.cy;
    if (!cy) return;
    const { from, to } = this.settings;
    if (!this.onPath && from && to && cy.getElementById(from).nonempty() && cy.getElementById(to).nonempty()) {
      const onPath = this.adjacency.between(from, to);
      if (onPath.size) this.onPath = onPath;
    }
    applyFilters(cy, this.settings.hideKinds, this.settings.hideNs);
    focusPaths(cy, this.onPath);
    search(cy, this.settings.find);
    const selected = this.selected ?? this.params.get("selected");
    if (selected && cy.getElementById(selected).nonempty()) this.select(selected);
    this.renderExplore();
  }

  /** The filter, search and path bar, for the namespaces now drawn. */
  renderExplore(): void {
    const settings = this.settings;
    const kinds = KINDS.map((kind) => {
      const box = h("input", { type: "checkbox", name: `show-${kind}`, checked: !settings.hideKinds.has(kind) });
      box.addEventListener("change", () => {
        if (box.checked) settings.hideKinds.delete(kind);
        else settings.hideKinds.add(kind);
        note({ hideKinds: [...settings.hideKinds].join(",") });
        if (this.cy) applyFilters(this.cy, settings.hideKinds, settings.hideNs);
      });
      return h("label", { class: "check" }, box, kind);
    });
    const namespaces = [...new Set(this.graph.nodes.map((node) => node.namespace))].sort();
    const nsBoxes = namespaces.map((namespace) => {
      const box = h("input", { type: "checkbox", name: "show-namespace", value: namespace, checked: !settings.hideNs.has(namespace) });
      box.addEventListener("change", () => {
        if (box.checked) settings.hideNs.delete(namespace);
        else settings.hideNs.add(namespace);
        note({ hideNs: settings.hideNs.size ? JSON.stringify([...settings.hideNs].sort()) : "" });
        if (this.cy) applyFilters(this.cy, settings.hideKinds, settings.hideNs);
      });
      return h("label", { class: "check wrap" }, box, namespace);
    });
    const find = h("input", { type: "search", name: "find", value: settings.find, placeholder: "Find in graph", "aria-label": "Find in graph" });
    const count = h("span", { class: "muted", id: "find-count" });
    const runSearch = () => {
      settings.find = find.value;
      note({ find: find.value });
      const found = this.cy ? search(this.cy, find.value) : [];
      replace(count, find.value.trim() ? `${found.length} found` : "");
      return found;
    };
    find.addEventListener("input", () => void runSearch());
    find.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || !this.cy) return;
      event.preventDefault();
      const found = runSearch();
      if (found.length) this.cy.fit(this.cy.nodes(".match"), 80);
    });
    const clear = h("button", { type: "button", name: "clear-paths", hidden: !this.onPath }, "Show the whole graph");
    clear.addEventListener("click", () => this.clearPaths());
    const fit = h("button", { type: "button", name: "fit" }, "Fit all");
    fit.addEventListener("click", () => {
      if (!this.cy) return;
      const { whole, labelsHidden } = fitAll(this.cy);
      const floor = `${Math.round(FIT_FLOOR * 100)} %`;
      this.reportDrawn(
        (whole ? "Every node is shown." : `Fit all stops at ${floor}: the graph is larger than the canvas even then, and the map in the corner shows the whole.`) +
          (labelsHidden ? " Labels are hidden at this zoom: scroll to zoom in." : ""),
      );
    });
    const centre = h("button", { type: "button", name: "centre" }, "Back to centre");
    centre.addEventListener("click", () => this.cy && focusOn(this.cy, this.centre()));
    replace(
      this.explore,
      h("fieldset", { class: "control" }, h("legend", {}, "Show"), kinds),
      h("details", { class: "control namespaces" }, h("summary", {}, `Namespaces (${namespaces.length})`), h("div", { class: "ns-list" }, nsBoxes)),
      h("label", { class: "control" }, find, count),
      h("span", { class: "view-buttons" }, clear, fit, centre),
    );
    if (settings.find) replace(count, `${this.cy ? this.cy.nodes(".match").length : 0} found`);
  }

  reportDrawn(text: string): void {
    const cy = this.cy;
    if (!cy) return;
    replace(
      this.status,
      `${counted(this.graph.nodes.length, "node")}, ${counted(this.graph.edges.length, "edge")}`,
      this.columns ? `, ${counted(this.columns.edges.length, "field edge")}` : "",
      ". ",
      text,
      this.graph.truncated ? h("strong", { class: "warn" }, " The server cut this graph at its node limit.") : null,
      this.graph.hidden
        ? h("span", { class: "hidden-note" }, ` ${counted(this.graph.hidden, "node")} hidden by your access.`)
        : null,
    );
  }
}

let session: GraphSession | null = null;

/** Open or close the side panel; the canvas takes the room it leaves. */
function showPanel(body: HTMLElement, toggle: HTMLElement, open: boolean): void {
  if (open === !body.classList.contains("panel-closed")) return;
  body.classList.toggle("panel-closed", !open);
  toggle.textContent = open ? "Hide details" : "Show details";
  toggle.setAttribute("aria-expanded", String(open));
  session?.cy?.resize();
}

/** Render the graph view for the route's parameters into `root`. */
export async function renderGraph(root: HTMLElement, params: URLSearchParams): Promise<void> {
  session?.cy?.destroy();
  session = null;
  delete window.__upstreamGraph;
  const settings = settingsOf(params);
  if (!settings) {
    replace(root, notice("Pick a dataset or a job first: search for it above, then open its graph."));
    return;
  }
  const status = h("p", { class: "status", id: "graph-status" }, "Loading lineage…");
  const hint = h("div", { id: "graph-hint" });
  const panel = h("aside", { class: "graph-panel", id: "graph-details" });
  const explore = h("div", { class: "controls explore", id: "graph-explore" });
  const canvas = h("div", { class: "graph-canvas", id: "graph", "aria-label": "Lineage graph" });
  const kind = settings.type === "dataset" ? "Dataset" : "Job";
  // Diffs are of dataset lineage; a job-centred graph keeps the choice for when it leads back.
  // All time reaches back to the epoch: no window lies before it to compare with.
  const nothingBefore = params.get("window") === ALL_TIME && comparesPrevious(settings, params);
  const comparing = settings.compare !== "" && settings.type === "dataset" && !nothingBefore;
  const page =
    settings.type === "dataset" ? links.dataset(settings.namespace, settings.name) : links.job(settings.namespace, settings.name);
  const body = h("div", { class: "graph-body" }, h("div", { class: "graph-stage" }, canvas), panel);
  const panelToggle = h("button", { type: "button", name: "toggle-panel", "aria-controls": "graph-details" }, "Hide details");
  panelToggle.addEventListener("click", () => showPanel(body, panelToggle, body.classList.contains("panel-closed")));
  replace(
    root,
    h(
      "section",
      { class: "graph-view" },
      h(
        "div",
        { class: "graph-bar" },
        h(
          "header",
          { class: "page-head graph-title" },
          h("h1", {}, h("span", { class: `badge badge-${settings.type}` }, kind), " ", h("a", { href: page }, settings.name)),
          h("p", { class: "muted wrap" }, settings.namespace),
        ),
        controls(settings, params),
        explore,
        panelToggle,
      ),
      hint,
      body,
      h(
        "div",
        { class: "graph-foot" },
        status,
        h(
          "p",
          { class: "legend muted" },
          h("span", { class: "key key-dataset" }, "dataset"),
          h("span", { class: "key key-job" }, "job"),
          h("span", { class: "key key-workflow" }, "workflow ▣"),
          h("span", { class: "key key-temporary" }, "temporary dataset"),
          settings.type === "job" ? h("span", { class: "key key-control" }, "runs before (job dependency)") : null,
          h("span", { class: "key key-upstream" }, "upstream path"),
          h("span", { class: "key key-downstream" }, "downstream path"),
          comparing ? [h("span", { class: "key key-added" }, "added"), h("span", { class: "key key-removed" }, "removed")] : null,
          "Upstream is on the left. Scroll to zoom; the map in the corner shows the whole graph.",
        ),
      ),
    ),
  );
  if (nothingBefore && settings.type === "dataset") {
    replace(hint, notice("All time has no window before it: compare it with another window… or an earlier time…, or pick a shorter window."));
  }
  const current = new GraphSession(settings, params, canvas, panel, explore, status);
  current.comparing = comparing;
  session = current;
  current.show(null);
  const route = location.hash;
  const requestedAt = performance.now();
  const centre: Target = { kind: settings.type, namespace: settings.namespace, name: settings.name };
  let compared = "";
  const full = comparing
    ? diffOf(params, settings).then(({ graph, sides }) => {
        compared = sides;
        return graph;
      })
    : lineageOf(centre, params, settings, settings.levels, settings.direction);
  const first = !comparing && settings.levels > 1 ? lineageOf(centre, params, settings, 1, settings.direction) : null;
  const fields = settings.columns ? fieldGraphOf(centre, settings.levels) : Promise.resolve(null);
  let firstPaintAt: number | null = null;
  let done = false;
  try {
    current.fields = await fields;
  } catch (error) {
    replace(status, errorText(error));
    status.classList.add("notice-error");
  }
  // The first level draws while the rest is on its way, unless the rest is there first; a
  // first level being laid out is finished before the whole graph is (it takes a fraction).
  let firstLevel: Promise<unknown> = Promise.resolve();
  first
    ?.then((graph) => {
      if (done || !graph.edges.length) return;
      replace(status, `Drawing the first level (${counted(graph.nodes.length, "node")}) while the rest loads…`);
      firstLevel = current.draw(graph).then((cy) => {
        if (cy) {
          firstPaintAt = performance.now();
          status.dataset.state = "first";
        }
      });
    })
    .catch(() => undefined); // the whole graph's request reports any failure
  let graph: LineageGraph;
  try {
    graph = await full;
  } catch (error) {
    done = true;
    replace(status, errorText(error));
    status.classList.add("notice-error");
    return;
  }
  done = true;
  const receivedAt = performance.now();
  if (!canvas.isConnected) return; // the user moved on while the request ran
  if (!graph.edges.length) {
    replace(status, comparing ? "No lineage on either side." : "No lineage in this window.");
    status.dataset.state = "empty";
    const offer = comparing ? null : await latestRunHint(centre, params, "graph");
    if (offer && hint.isConnected) replace(hint, offer);
    if (!graph.nodes.length) return;
  }
  await firstLevel;
  replace(status, `Laying out ${counted(graph.nodes.length, "node")}…`);
  const cy = await current.draw(graph);
  if (!cy) return;
  const laidOutAt = performance.now();
  // The frame after the next is the first that shows the graph.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const drawnAt = performance.now();
      const probe: GraphProbe = {
        cy,
        route,
        requestedAt,
        firstPaintAt: firstPaintAt ?? drawnAt,
        receivedAt,
        laidOutAt,
        drawnAt,
        nodes: cy.nodes("[kind != 'field']").length,
        edges: cy.edges("[!field]").length,
        complete: true,
      };
      window.__upstreamGraph = probe;
      const changed = (change: string) => graph.edges.filter((edge) => edge.change === change).length;
      current.reportDrawn(
        (comparing
          ? `Compared ${compared}: ${counted(changed("added"), "edge")} added, ${changed("removed")} removed, ${changed("kept")} kept. `
          : "") +
          `Fetched in ${Math.round(receivedAt - requestedAt)} ms, laid out in ${Math.round(laidOutAt - receivedAt)} ms, ` +
          (firstPaintAt ? `first level on screen after ${Math.round(firstPaintAt - requestedAt)} ms, ` : "") +
          `all drawn ${Math.round(drawnAt - requestedAt)} ms after the request.`,
      );
      status.dataset.state = "drawn";
    }),
  );
}
