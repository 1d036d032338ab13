// Exploring a drawn graph without drawing it again: a node's upstream and downstream paths
// highlighted with the rest dimmed, filters by kind and namespace, search within the graph,
// and the paths between two chosen nodes. Each only sets classes on Cytoscape's elements
// (graph-style.ts says how they look), so the browser tests can read what is shown.

import type { Core, NodeSingular } from "cytoscape";

import type { Adjacency } from "./graph-model";

const PATH_CLASSES = "upstream downstream selected dimmed";

export type Kind = "dataset" | "job" | "workflow" | "temporary";
export const KINDS: Kind[] = ["dataset", "job", "workflow", "temporary"];

/** Take every highlight off. */
export function clearHighlight(cy: Core): void {
  cy.elements().removeClass(PATH_CLASSES);
}

/**
 * Mark what lies upstream (`upstream`) and downstream (`downstream`) of `id` along
 * `adjacency`, the edges on those paths too, and dim everything else. A field row's paths
 * follow field edges; the datasets holding the highlighted fields stay undimmed.
 */
export function highlight(cy: Core, id: string, adjacency: Adjacency): void {
  const up = adjacency.reach(id, "upstream");
  const down = adjacency.reach(id, "downstream");
  cy.batch(() => {
    clearHighlight(cy);
    const holding = new Set<string>();
    for (const litId of [id, ...up, ...down]) {
      const row = cy.getElementById(litId);
      if (row.nonempty() && row.data("kind") === "field") holding.add(row.data("dataset") as string);
    }
    cy.nodes().forEach((node) => {
      const nodeId = node.id();
      if (nodeId === id) node.addClass("selected");
      else if (up.has(nodeId)) node.addClass("upstream");
      else if (down.has(nodeId)) node.addClass("downstream");
      else if (!holding.has(nodeId)) node.addClass("dimmed");
    });
    cy.edges().forEach((edge) => {
      const source = edge.data("source") as string;
      const target = edge.data("target") as string;
      if (up.has(source) && (up.has(target) || target === id)) edge.addClass("upstream");
      else if (down.has(target) && (down.has(source) || source === id)) edge.addClass("downstream");
      else edge.addClass("dimmed");
    });
  });
}

/** The kind a filter knows a node by: temporary datasets are their own kind. */
function kindOf(node: NodeSingular): Kind {
  if (node.data("temporary")) return "temporary";
  const kind = node.data("kind") as string;
  return kind === "job" || kind === "workflow" ? kind : "dataset";
}

/** Hide nodes of the kinds and namespaces given (never the centre); field rows follow their
 * dataset. */
export function applyFilters(cy: Core, hideKinds: Set<string>, hideNamespaces: Set<string>): void {
  cy.batch(() => {
    const hidden = new Set<string>();
    cy.nodes().forEach((node) => {
      if (node.data("kind") === "field") return;
      const out = !node.data("centre") && (hideKinds.has(kindOf(node)) || hideNamespaces.has(node.data("namespace")));
      node.toggleClass("filtered", out);
      if (out) hidden.add(node.id());
    });
    cy.nodes("[kind = 'field']").forEach((row) => {
      row.toggleClass("filtered", hidden.has(row.data("dataset")));
    });
  });
}

/** Ring the nodes whose name, namespace or field holds `text` (any case); their ids. */
export function search(cy: Core, text: string): string[] {
  const wanted = text.trim().toLowerCase();
  const found: string[] = [];
  cy.batch(() => {
    cy.nodes().removeClass("match");
    if (!wanted) return;
    cy.nodes(":visible").forEach((node) => {
      const haystack = [node.data("name"), node.data("namespace"), node.data("field")]
        .filter((part) => typeof part === "string")
        .join("\n")
        .toLowerCase();
      const own = node.data("kind") === "field" ? String(node.data("field")).toLowerCase() : haystack;
      if (own.includes(wanted)) {
        node.addClass("match");
        found.push(node.id());
      }
    });
  });
  return found;
}

/** Show only the nodes of `onPath` (null: every node) and the edges between them. */
export function focusPaths(cy: Core, onPath: Set<string> | null): void {
  cy.batch(() => {
    cy.nodes().forEach((node) => {
      const owner = node.data("kind") === "field" ? (node.data("dataset") as string) : node.id();
      node.toggleClass("off-path", onPath !== null && !onPath.has(owner));
    });
  });
}
