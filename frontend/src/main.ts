// Entry point: route the URL hash to a view, and keep the top search box working.

import { h, replace } from "./dom";
import { currentRoute } from "./route";
import { renderDataset } from "./views/dataset";
import { renderFields } from "./views/fields";
import { renderGraph } from "./views/graph";
import { renderJob } from "./views/job";
import { renderSearch } from "./views/search";

type View = (root: HTMLElement, params: URLSearchParams) => Promise<void>;

const VIEWS: Partial<Record<string, View>> = {
  search: renderSearch,
  dataset: renderDataset,
  job: renderJob,
  graph: renderGraph,
  fields: renderFields,
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
    location.hash = `#/search?${new URLSearchParams({ q: input.value.trim() }).toString()}`;
  });
}

wireTopSearch();
window.addEventListener("hashchange", show);
show();
