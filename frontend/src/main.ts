// Entry point: route the URL hash to a view, and keep the top search box working.

import { h, replace } from "./dom";
import { CARRIED, carried, currentRoute, go } from "./route";
import { renderDataset } from "./views/dataset";
import { renderFields } from "./views/fields";
import { renderGraph } from "./views/graph";
import { renderHome } from "./views/home";
import { renderImpact } from "./views/impact";
import { renderJob } from "./views/job";
import { renderMap } from "./views/map";
import { renderRunGraph } from "./views/run-graph";
import { renderSearch } from "./views/search";
import { renderTag } from "./views/tag";

type View = (root: HTMLElement, params: URLSearchParams) => Promise<void>;

const VIEWS: Partial<Record<string, View>> = {
  home: renderHome,
  impact: renderImpact,
  search: renderSearch,
  dataset: renderDataset,
  job: renderJob,
  map: renderMap,
  graph: renderGraph,
  fields: renderFields,
  run: renderRunGraph,
  tag: renderTag,
};

function show(): void {
  const root = document.getElementById("view") as HTMLElement;
  const route = currentRoute();
  const view = VIEWS[route.view];
  document.body.dataset.view = view ? route.view : "unknown";
  if (!view) {
    replace(root, h("p", { class: "notice notice-error" }, `There is no page called “${route.view}”.`));
    return;
  }
  void view(root, route.params);
}

function wireTopSearch(): void {
  const form = document.getElementById("topsearch") as HTMLFormElement;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const input = form.elements.namedItem("q") as HTMLInputElement;
    go("search", { q: input.value.trim() });
  });
}

/**
 * A link followed inside the UI takes the window and graph settings the URL has now: links are
 * built with those of when their view was drawn, and filters change the URL in place since.
 */
function carryOnClick(): void {
  document.addEventListener("click", (event) => {
    const link = (event.target as Element | null)?.closest?.("a[href^='#/']");
    if (!(link instanceof HTMLAnchorElement) || link.dataset.exact !== undefined) return;
    const [view, query = ""] = link.getAttribute("href")!.slice(2).split("?");
    const params = new URLSearchParams(query);
    const now = carried();
    for (const key of CARRIED) {
      if (now[key]) params.set(key, now[key]);
      else params.delete(key);
    }
    const text = params.toString();
    link.setAttribute("href", `#/${view}${text ? `?${text}` : ""}`);
  });
}

wireTopSearch();
carryOnClick();
window.addEventListener("hashchange", show);
show();
