// The field view (design §4.3): pick a dataset's field, see its field graph hop by hop, the
// paths of operations that made it (seed 000: read → parse → concat → create) with their runs,
// and the fields it comes from and flows to in other datasets.

import {
  api,
  type FieldPath,
  type FieldSummarySide,
  type FieldWithLineage,
  type Operation,
} from "../api";
import { counted, h, notice, replace } from "../dom";
import { drawFieldGraph } from "../field-graph";
import { go, historyQuery, links, paramsObject } from "../route";
import { asOfControl, windowControl } from "../window-control";
import { watchControl } from "../watch-control";
import { datasetLink, errorText, section } from "./common";

const DEFAULT_LEVELS = 1;
const RUNS_LISTED = 5;

function pickDataset(): HTMLElement {
  const ns = h("input", { name: "ns", placeholder: "namespace", "aria-label": "Namespace", required: true });
  const name = h("input", { name: "name", placeholder: "dataset name", "aria-label": "Dataset name", required: true });
  const form = h(
    "form",
    { class: "search-form" },
    ns,
    name,
    h("button", { type: "submit" }, "Show fields"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go("fields", { ns: ns.value, name: name.value });
  });
  return h(
    "section",
    { class: "page" },
    h("h1", {}, "Field lineage"),
    h("p", {}, "Open a dataset (search above, then “Field lineage”), or name one here:"),
    form,
  );
}

function runId(run: FieldPath["runs"][number]): string {
  return typeof run === "string" ? run : (run.runId ?? run.id ?? JSON.stringify(run));
}

function operationStep(operation: Operation, index: number): HTMLElement {
  const inputs = operation.inputs.map((input) =>
    input.type === "source"
      ? h("li", { class: "input-source" }, "dataset ", datasetLink(input.namespace, input.name))
      : h("li", { class: "input-field" }, "field ", h("code", {}, input.name)),
  );
  return h(
    "li",
    { class: "step", "data-step": index + 1 },
    h("div", { class: "step-name" }, operation.name),
    operation.description ? h("p", { class: "step-description" }, operation.description) : null,
    h("div", { class: "step-io" }, h("span", { class: "muted" }, "in"), h("ul", {}, inputs)),
    operation.outputs.length
      ? h(
          "div",
          { class: "step-io" },
          h("span", { class: "muted" }, "out"),
          h("ul", {}, operation.outputs.map((output) => h("li", {}, h("code", {}, output)))),
        )
      : null,
  );
}

function pathCard(path: FieldPath, index: number): HTMLElement {
  const runs = path.runs.map(runId);
  return h(
    "article",
    { class: "path", "data-path": index + 1 },
    h("h3", {}, `Path ${index + 1}`, h("span", { class: "muted" }, ` — ${counted(path.operations.length, "operation")}`)),
    h("ol", { class: "steps" }, path.operations.map(operationStep)),
    h(
      "p",
      { class: "path-runs" },
      counted(runs.length, "run"),
      runs.length ? ": " : "",
      runs.slice(0, RUNS_LISTED).map((id, i) => [i ? ", " : "", h("code", {}, id)]),
      runs.length > RUNS_LISTED ? ` and ${runs.length - RUNS_LISTED} more` : "",
    ),
  );
}

function summarySide(title: string, sides: FieldSummarySide[] | undefined, className: string): HTMLElement {
  return h(
    "div",
    { class: `summary ${className}` },
    h("h3", {}, title),
    sides?.length
      ? h(
          "ul",
          {},
          sides.map((side) =>
            h(
              "li",
              {},
              datasetLink(side.dataset.namespace, side.dataset.name),
              h("span", { class: "muted wrap" }, ` (${side.dataset.namespace})`),
              h(
                "ul",
                { class: "chips" },
                side.fields.map((field) =>
                  h(
                    "li",
                    {},
                    h("a", { href: links.fields(side.dataset.namespace, side.dataset.name, field) }, field),
                    originBadge(side.origins?.[field] ?? []),
                  ),
                ),
              ),
            ),
          ),
        )
      : notice("None in this window."),
  );
}

/** How each origin of field lineage is named to people, and what it means. */
const ORIGINS: Record<string, [string, string]> = {
  lineageFacet: ["facet", "stated by the producer's lineage facet"],
  fieldOperations: ["operations", "recorded field operations"],
  columnLineage: ["columnLineage", "stated by the producer's columnLineage facet"],
  sql: ["SQL", "read by Upstream from the job's SQL"],
};

function originBadge(origins: string[]): HTMLElement | string {
  if (!origins.length) return "";
  const known = origins.map((o) => ORIGINS[o] ?? [o, o]);
  return h(
    "span",
    { class: "origin", title: known.map(([, meaning]) => meaning).join("; ") },
    known.map(([label]) => label).join(", "),
  );
}

function fieldList(
  fields: (FieldWithLineage | string)[],
  namespace: string,
  name: string,
  chosen: string | null,
): HTMLElement {
  const normalised = fields.map((field) => (typeof field === "string" ? { name: field, lineage: true } : field));
  if (!normalised.length) return notice("This dataset has no known fields.");
  return h(
    "ul",
    { class: "field-list", id: "field-list" },
    normalised.map((field) =>
      h(
        "li",
        { class: field.lineage ? "" : "no-lineage" },
        h(
          "a",
          {
            href: links.fields(namespace, name, field.name),
            "aria-current": field.name === chosen ? "true" : null,
            title: field.lineage ? "" : "no lineage recorded for this field",
          },
          field.name,
        ),
      ),
    ),
  );
}

export async function renderFields(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const namespace = params.get("ns");
  const name = params.get("name");
  if (!namespace || !name) {
    replace(root, pickDataset());
    return;
  }
  const field = params.get("field");
  const levelsValue = Number.parseInt(params.get("levels") ?? "", 10);
  const levels = Number.isFinite(levelsValue) && levelsValue >= 1 ? levelsValue : DEFAULT_LEVELS;
  // Every field endpoint takes the as-of time too (docs/history.md).
  const window = historyQuery(params);
  const change = (changes: Record<string, string>) => go("fields", { ...paramsObject(params), ...changes });
  const levelsInput = h("input", { type: "number", name: "levels", min: 1, max: 100, value: levels, "aria-label": "Levels" });
  levelsInput.addEventListener("change", () => change({ levels: levelsInput.value }));
  const list = h("div", {}, notice("Loading fields…"));
  const detail = h("div", { id: "field-detail" }, field ? notice("Loading lineage…") : notice("Pick a field."));
  replace(
    root,
    h(
      "section",
      { class: "page" },
      h(
        "header",
        { class: "page-head" },
        h("h1", {}, "Field lineage of ", datasetLink(namespace, name), field ? [" · ", h("code", { id: "field-name" }, field)] : null),
        h("p", { class: "muted wrap" }, namespace),
        h(
          "form",
          { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
          windowControl(params, change),
          asOfControl(params, change),
          h("label", { class: "control" }, "Levels across datasets ", levelsInput),
        ),
        field ? watchControl({ field: { namespace, name, field } }) : null,
      ),
      h("div", { class: "field-layout" }, h("nav", { class: "card field-nav" }, h("h2", {}, "Fields"), list), detail),
    ),
  );
  api
    .fieldsWithLineage(namespace, name, window)
    .then((fields) => replace(list, fieldList(fields, namespace, name, field)))
    .catch((error: unknown) => replace(list, h("p", { class: "notice notice-error" }, errorText(error))));
  if (!field) return;
  const [paths, summary, fieldGraph, datasets] = await Promise.allSettled([
    api.fieldPaths(namespace, name, field, window),
    api.fieldSummary(namespace, name, field, { ...window, levels }),
    api.columnLineage(`datasetField:${namespace}:${name}:${field}`, levels),
    api.datasetLineage(namespace, name, { ...window, levels }),
  ]);
  const canvas = h("div", { class: "field-graph", id: "field-graph", "aria-label": "Field lineage graph" });
  const more = h("button", { type: "button", name: "more-hops" }, "One more hop");
  more.addEventListener("click", () => change({ levels: String(levels + 1) }));
  replace(
    detail,
    section(
      "Field graph",
      h(
        "p",
        { class: "muted" },
        `Fields ${counted(levels, "hop")} up and down from this one; its paths are highlighted, temporary datasets dashed. Click a field to follow it. `,
        more,
        " ",
        h("a", { href: links.impact(namespace, name, field), id: "field-impact" }, "Impact of this field"),
      ),
      fieldGraph.status === "fulfilled"
        ? fieldGraph.value.graph.length
          ? h("div", { class: "graph-stage" }, canvas)
          : notice("No field edges lead to or from this field.")
        : h("p", { class: "notice notice-error", role: "alert" }, errorText(fieldGraph.reason)),
    ),
    section(
      "How it was made",
      paths.status === "fulfilled"
        ? paths.value.paths.length
          ? h("div", { class: "paths" }, paths.value.paths.map(pathCard))
          : notice("No recorded operations made this field in this window.")
        : h("p", { class: "notice notice-error", role: "alert" }, errorText(paths.reason)),
    ),
    section(
      "Across datasets",
      summary.status === "fulfilled"
        ? h(
            "div",
            { class: "summary-sides" },
            summarySide("Comes from", summary.value.incoming, "incoming"),
            summarySide("Flows to", summary.value.outgoing, "outgoing"),
          )
        : h("p", { class: "notice notice-error", role: "alert" }, errorText(summary.reason)),
    ),
  );
  if (fieldGraph.status !== "fulfilled" || !fieldGraph.value.graph.length) return;
  const temporary = new Set<string>();
  if (datasets.status === "fulfilled") {
    for (const entry of Object.values(datasets.value.data)) {
      if (entry.temporary) temporary.add(JSON.stringify([entry.entityId.namespace, entry.entityId.name]));
    }
  }
  await drawFieldGraph(canvas, fieldGraph.value, temporary, { namespace, name, field }, (ns, dataset, picked) =>
    go("fields", { ...paramsObject(params), ns, name: dataset, field: picked }),
  );
}
