// The map of the estate (`#/map`, design §4.7): datasets grouped by their container at one
// level — namespaces, then databases or buckets, then schemas or folders — with how many
// datasets each group holds and how many data flows run between groups. The first view of an
// estate of thousands of datasets; a group drills down in one click.

import type { ElementDefinition } from "cytoscape";

import { api, type HierarchyMap, type MapGroup } from "../api";
import { openCanvas } from "../canvas";
import { counted, h, notice, replace, table } from "../dom";
import { fitAll } from "../graph-canvas";
import { NODE_WIDTH } from "../graph-style";
import { layOut } from "../layout";
import { go, href, paramsObject } from "../route";
import { errorText, section } from "./common";

const GROUP_HEIGHT = 44;

/** A group's key from its containers, as the server writes it (`model/hierarchy.group_key`). */
function groupKey(containers: string[]): string {
  return containers.map((part) => part.replaceAll("%", "%25").replaceAll("/", "%2F")).join("/");
}

/** The link that shows the groups one level below `group`. */
function drillDown(group: MapGroup, level: number): string {
  return href("map", { level: level + 1, within: group.key });
}

/** The containers of `within`, each a link back up to the map inside it. */
function trail(answer: HierarchyMap): HTMLElement {
  const steps: (HTMLElement | string)[] = [h("a", { href: href("map", { level: 1, within: null }) }, "All namespaces")];
  answer.within.forEach((container, index) => {
    const within = groupKey(answer.within.slice(0, index + 1));
    steps.push(" › ", h("a", { href: href("map", { level: index + 2, within }) }, container));
  });
  return h("nav", { class: "map-trail", "aria-label": "Containers" }, steps);
}

function groupsTable(answer: HierarchyMap): HTMLElement {
  return table(
    ["Group", "Datasets", "Flows inside"],
    answer.groups.map((group) => [
      group.deeper
        ? h("a", { href: drillDown(group, answer.level), title: "Show the containers inside" }, group.containers.at(-1) ?? group.key)
        : h("span", {}, group.containers.at(-1) ?? group.key),
      String(group.datasets),
      String(group.flowsWithin),
    ]),
    { class: "map-groups" },
  );
}

function flowsTable(answer: HierarchyMap): HTMLElement {
  const names = new Map(answer.groups.map((group) => [group.key, group.containers.at(-1) ?? group.key]));
  return table(
    ["From", "To", "Flows"],
    answer.edges.map((edge) => [names.get(edge.source) ?? edge.source, names.get(edge.target) ?? edge.target, String(edge.flows)]),
    { class: "map-flows" },
  );
}

/** The groups as boxes and the flows between them as arrows, laid out left to right. */
async function drawMap(stage: HTMLElement, answer: HierarchyMap): Promise<void> {
  const nodes: ElementDefinition[] = answer.groups.map((group) => ({
    group: "nodes",
    data: {
      id: group.key,
      kind: "group",
      caption: `${group.containers.at(-1) ?? group.key}\n${counted(group.datasets, "dataset")}`,
      width: NODE_WIDTH,
      height: GROUP_HEIGHT,
      deeper: group.deeper,
    },
  }));
  const edges: ElementDefinition[] = answer.edges.map((edge, index) => ({
    group: "edges",
    data: { id: `flow-${index}`, source: edge.source, target: edge.target, flows: edge.flows, caption: String(edge.flows) },
  }));
  const positions = await layOut(
    answer.groups.map((group) => ({ id: group.key, width: NODE_WIDTH, height: GROUP_HEIGHT })),
    answer.edges.map((edge, index) => ({ id: `flow-${index}`, source: edge.source, target: edge.target })),
  );
  for (const node of nodes) node.position = positions[node.data.id as string];
  const canvas = h("div", { class: "graph-canvas map-canvas", id: "map-canvas" });
  replace(stage, canvas);
  const cy = openCanvas(canvas, [...nodes, ...edges]);
  fitAll(cy);
  cy.on("tap", "node[?deeper]", (event) => {
    go("map", { level: answer.level + 1, within: event.target.id() as string });
  });
  // What the browser tests read: the drawing, and which level of which group it shows.
  (window as unknown as { __upstreamMap?: unknown }).__upstreamMap = { cy, level: answer.level };
}

export async function renderMap(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const asked = Number.parseInt(params.get("level") ?? "", 10);
  const within = params.get("within");
  const level = Number.isFinite(asked) && asked >= 1 ? asked : within ? within.split("/").length + 1 : 1;
  const input = h("input", { type: "number", name: "level", min: 1, max: 20, value: level, "aria-label": "Level" });
  input.addEventListener("change", () => {
    const value = Number.parseInt(input.value, 10);
    if (Number.isFinite(value) && value >= 1) go("map", { ...paramsObject(params), level: String(value) });
  });
  const body = h("div", {}, notice("Loading…"));
  replace(
    root,
    h(
      "div",
      { class: "page" },
      h(
        "header",
        { class: "page-head" },
        h("h1", {}, "Map of the estate"),
        h("p", { class: "controls" }, h("label", { class: "control" }, "Level ", input)),
      ),
      body,
    ),
  );
  try {
    const answer = await api.hierarchyMap(level, within, params.get("asOf"));
    const stage = h("div", { class: "graph-stage map-stage" }, notice("Drawing…"));
    replace(
      body,
      trail(answer),
      section(`${counted(answer.groups.length, "group")} at level ${answer.level} of ${answer.depth}`, stage, groupsTable(answer)),
      section("Flows between groups", answer.edges.length ? flowsTable(answer) : notice("No data flows from one of these groups to another.")),
    );
    if (answer.groups.length) await drawMap(stage, answer);
    else replace(stage, notice("No dataset is inside this group."));
  } catch (error) {
    replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
  }
}
