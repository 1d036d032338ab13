// Search: datasets and jobs by name, with their namespace (Marquez's /api/v1/search).

import { api } from "../api";
import { h, notice, replace, table, time } from "../dom";
import { go, links } from "../route";
import { badge, errorText, namespaceLabel } from "./common";

const LIMIT = 100;

export async function renderSearch(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const q = params.get("q") ?? "";
  const input = h("input", {
    type: "search",
    name: "q",
    value: q,
    placeholder: "Name or part of a name",
    "aria-label": "Search",
    autofocus: true,
  });
  const form = h("form", { class: "search-form", role: "search" }, input, h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go("search", { q: input.value.trim() });
  });
  const results = h("div", { id: "search-results" });
  replace(root, h("section", { class: "search-view" }, h("h1", {}, "Find a dataset or a job"), form, results));
  if (!q.trim()) {
    replace(results, notice("Type part of a dataset's or job's name."));
    return;
  }
  replace(results, notice("Searching…"));
  try {
    const found = await api.search(q.trim(), LIMIT);
    if (!found.results.length) {
      replace(results, notice(`Nothing is named like “${q}”.`));
      return;
    }
    const rows = found.results.map((result) => {
      const type = result.type === "JOB" ? "job" : "dataset";
      const page =
        type === "job" ? links.job(result.namespace, result.name) : links.dataset(result.namespace, result.name);
      return [
        badge(type),
        h("a", { href: page, class: "entity" }, result.name),
        namespaceLabel(result.namespace),
        time(result.updatedAt),
        h("a", { href: links.graph(type, result.namespace, result.name) }, "graph"),
      ];
    });
    replace(
      results,
      h("p", { class: "muted" }, `${found.totalCount} found${found.totalCount > found.results.length ? `, first ${found.results.length} shown` : ""}.`),
      table(["Type", "Name", "Namespace", "Updated", ""], rows, { class: "results" }),
    );
  } catch (error) {
    replace(results, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
  }
}
