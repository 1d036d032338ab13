// A run's lineage (design §4.5): the runs that wrote the dataset versions it read, and those
// runs' own inputs, `levels` runs back (or forward: the runs that read what it wrote). Drawn
// like the dataset graph — layered left to right, paths lit on pointing — with runs and
// dataset versions as the nodes.


import { api, type RunLineage, type RunNode } from "../api";
import { openCanvas } from "../canvas";
import { counted, h, notice, replace, time } from "../dom";
import { drawing, focusOn, placed } from "../graph-canvas";
import { clearHighlight, highlight } from "../graph-explore";
import { Adjacency, type GraphEdge, type GraphNode, type LineageGraph, edgeId } from "../graph-model";
import { LINE_LETTERS, middleEllipsis } from "../labels";
import { layOut } from "../layout";
import { go, links, paramsObject } from "../route";
import { asOfControl } from "../window-control";
import { errorText, jobLink, runState, stateWord } from "./common";
import type { GraphProbe } from "./graph";

const DEFAULT_LEVELS = 3;
type RunDirection = "upstream" | "downstream" | "both";

const runNodeId = (runId: string) => `run:${runId}`;

function moment(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : "not started";
}

/** Runs and versions as graph nodes, reads as version → run and writes as run → version. */
function runGraph(lineage: RunLineage): LineageGraph {
  const runs = new Map<string, RunNode>(lineage.runs.map((run) => [run.runId, run]));
  const nodes: GraphNode[] = lineage.runs.map((run) => ({
    id: runNodeId(run.runId),
    kind: "job",
    namespace: run.job.namespace,
    name: run.job.name,
    temporary: false,
    centre: run.runId === lineage.runId,
    runId: run.runId,
    caption: `${middleEllipsis(run.job.name, LINE_LETTERS)}\n${moment(run.startedAt)}\n${stateWord(run.state)}`,
  }));
  for (const version of lineage.datasetVersions) {
    const writer = version.writtenBy ? runs.get(version.writtenBy) : undefined;
    nodes.push({
      id: version.id,
      kind: "dataset",
      namespace: version.dataset.namespace,
      name: version.dataset.name,
      temporary: false,
      centre: false,
      version: version.writtenBy ?? "",
      caption: `${middleEllipsis(version.dataset.name, LINE_LETTERS)}\n${
        writer ? `as written ${moment(writer.endedAt ?? writer.startedAt)}` : "writer not known"
      }`,
    });
  }
  const edges: GraphEdge[] = lineage.edges.map((edge) => {
    const [source, target] =
      edge.type === "read" ? [edge.datasetVersion, runNodeId(edge.run)] : [runNodeId(edge.run), edge.datasetVersion];
    return { id: edgeId(source, target), source, target, runs: 1 };
  });
  return { nodes, edges, truncated: lineage.truncated === true };
}

function detailsOf(lineage: RunLineage, id: string, params: URLSearchParams): HTMLElement {
  const run = lineage.runs.find((r) => runNodeId(r.runId) === id);
  if (run) {
    const centre = h("button", { type: "button", name: "recentre" }, "Centre here");
    centre.addEventListener("click", () => go("run", { ...paramsObject(params), id: run.runId }));
    return h(
      "dl",
      {},
      h("dt", {}, "Run"),
      h("dd", { class: "wrap" }, h("code", { id: "panel-run" }, run.runId)),
      h("dt", {}, "Job"),
      h("dd", { class: "wrap" }, jobLink(run.job.namespace, run.job.name)),
      h("dt", {}, "State"),
      h("dd", {}, runState(run.state)),
      h("dt", {}, "Started"),
      h("dd", {}, time(run.startedAt)),
      h("dt", {}, "Ended"),
      h("dd", {}, time(run.endedAt)),
      h("dd", {}, centre),
    );
  }
  const version = lineage.datasetVersions.find((v) => v.id === id);
  if (!version) return h("p", {});
  return h(
    "dl",
    {},
    h("dt", {}, "Dataset version"),
    h("dd", { class: "wrap" }, h("a", { href: links.dataset(version.dataset.namespace, version.dataset.name) }, version.dataset.name)),
    h("dt", {}, "Namespace"),
    h("dd", { class: "wrap" }, version.dataset.namespace),
    h("dt", {}, "Written by run"),
    h("dd", { class: "wrap" }, version.writtenBy ? h("a", { href: links.run(version.writtenBy) }, version.writtenBy) : "not known"),
    version.producerVersion ? [h("dt", {}, "Producer's version"), h("dd", { class: "wrap" }, version.producerVersion)] : null,
  );
}

export async function renderRunGraph(root: HTMLElement, params: URLSearchParams): Promise<void> {
  delete window.__upstreamGraph;
  const id = params.get("id") ?? "";
  if (!id) {
    replace(root, notice("Pick a run first: a dataset's or a job's page lists its runs."));
    return;
  }
  const levelsAsked = Number.parseInt(params.get("levels") ?? "", 10);
  const levels = Number.isFinite(levelsAsked) && levelsAsked >= 1 ? levelsAsked : DEFAULT_LEVELS;
  const asked = params.get("direction");
  const direction: RunDirection = asked === "downstream" || asked === "both" ? asked : "upstream";
  const change = (changes: Record<string, string>) => go("run", { ...paramsObject(params), ...changes });
  const levelInput = h("input", { type: "number", name: "levels", min: 1, max: 100, value: levels, "aria-label": "Levels" });
  levelInput.addEventListener("change", () => {
    const value = Number.parseInt(levelInput.value, 10);
    if (Number.isFinite(value) && value >= 1) change({ levels: String(value) });
  });
  const directionSelect = h(
    "select",
    { name: "direction", "aria-label": "Direction" },
    (["upstream", "downstream", "both"] as const).map((value) => h("option", { value, selected: value === direction }, value)),
  );
  directionSelect.addEventListener("change", () => change({ direction: directionSelect.value }));
  const status = h("p", { class: "status", id: "graph-status" }, "Loading the run's lineage…");
  const panel = h("aside", { class: "graph-panel", id: "graph-details" }, h("p", { class: "muted" }, "Point at a run or a dataset version to see its paths; click it for details."));
  const canvas = h("div", { class: "graph-canvas", id: "graph", "aria-label": "Run lineage graph" });
  const head = h("header", { class: "page-head graph-title" }, h("h1", {}, h("span", { class: "badge badge-run" }, "run"), " ", h("code", {}, id)));
  replace(
    root,
    h(
      "section",
      { class: "graph-view" },
      h(
        "div",
        { class: "graph-bar" },
        head,
        h(
          "form",
          { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
          h("label", { class: "control" }, "Levels ", levelInput),
          h("label", { class: "control" }, "Direction ", directionSelect),
          asOfControl(params, change),
        ),
      ),
      h("div", { class: "graph-body" }, h("div", { class: "graph-stage" }, canvas), panel),
      h(
        "div",
        { class: "graph-foot" },
        status,
        h(
          "p",
          { class: "legend muted" },
          h("span", { class: "key key-job" }, "run"),
          h("span", { class: "key key-dataset" }, "dataset version (as one run wrote it)"),
          "Each read is joined to the run that wrote the version read: the one the producer named, else the last run that completed writing it before the read started. Upstream is on the left.",
        ),
      ),
    ),
  );
  const requestedAt = performance.now();
  let lineage: RunLineage;
  try {
    lineage = await api.runLineage(id, { direction, levels, asOf: params.get("asOf") });
  } catch (error) {
    replace(status, errorText(error));
    status.classList.add("notice-error");
    return;
  }
  const receivedAt = performance.now();
  if (!canvas.isConnected) return;
  const own = lineage.runs.find((run) => run.runId === lineage.runId);
  if (own) describeRun(head, own);
  const graph = runGraph(lineage);
  const plan = drawing(graph, null, false);
  const at = placed(plan, await layOut(plan.layoutNodes, plan.layoutEdges));
  if (!canvas.isConnected) return;
  const laidOutAt = performance.now();
  const cy = openCanvas(
    canvas,
    plan.elements.map((element) => ({ ...element, position: at[String(element.data.id)] })),
  );
  const adjacency = new Adjacency(graph.edges);
  let selected: string | null = null;
  cy.on("mouseover", "node", (event) => {
    if (!selected) highlight(cy, event.target.id(), adjacency);
  });
  cy.on("mouseout", "node", () => {
    if (!selected) clearHighlight(cy);
  });
  cy.on("tap", "node", (event) => {
    selected = event.target.id() as string;
    highlight(cy, selected, adjacency);
    replace(panel, detailsOf(lineage, selected, params));
  });
  cy.on("tap", (event) => {
    if (event.target !== cy) return;
    selected = null;
    clearHighlight(cy);
  });
  focusOn(cy, runNodeId(lineage.runId));
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const drawnAt = performance.now();
      const probe: GraphProbe = {
        cy,
        route: location.hash,
        requestedAt,
        firstPaintAt: drawnAt,
        receivedAt,
        laidOutAt,
        drawnAt,
        nodes: cy.nodes().length,
        edges: cy.edges().length,
        complete: true,
      };
      window.__upstreamGraph = probe;
      const earlier = lineage.runs.length - 1;
      replace(
        status,
        `${counted(earlier, "other run")} and ${counted(lineage.datasetVersions.length, "dataset version")}, ${direction}, ${counted(levels, "level")}.`,
        lineage.truncated ? h("strong", { class: "warn" }, " The server cut this graph at its node limit.") : null,
        earlier || direction !== "upstream" ? null : " No run we know of wrote what this run read.",
      );
      status.dataset.state = "drawn";
    }),
  );
}

/** The run's job, state and times under the page's title. */
function describeRun(head: HTMLElement, run: RunNode): void {
  head.append(
    h(
      "p",
      { class: "muted" },
      "Run of ",
      jobLink(run.job.namespace, run.job.name),
      ` · ${stateWord(run.state)} · started `,
      time(run.startedAt),
    ),
  );
}
