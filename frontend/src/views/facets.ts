// Facets shown as they were sent: one collapsible block per facet, its JSON as text.

import { h, notice } from "../dom";

export function facetList(facets: Record<string, unknown> | undefined): HTMLElement {
  const names = Object.keys(facets ?? {}).sort();
  if (!names.length) return notice("No facets.");
  return h(
    "div",
    { class: "facets" },
    names.map((name) =>
      h("details", {}, h("summary", {}, name), h("pre", {}, JSON.stringify((facets ?? {})[name], null, 2))),
    ),
  );
}
