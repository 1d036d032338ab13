// A tag's reach (design §4.5): the fields carrying the tag (a tagged dataset tags each of its
// fields) and every field their data flowed into, `levels` field edges on — where a PII
// column's data went.

import { api, type FieldsOfDataset } from "../api";
import { type Child, counted, h, notice, replace, table } from "../dom";
import { go, links, paramsObject } from "../route";
import { watchControl } from "../watch-control";
import { datasetLink, errorText, section } from "./common";

/** The tag endpoint's default: far, since the question is where the data ended up. */
const DEFAULT_LEVELS = 10;

/** A chip for a tag, linking to its reach. */
export function tagChip(tag: string): HTMLElement {
  return h("a", { class: "tag", href: links.tag(tag), title: `Where data tagged ${tag} went` }, tag);
}

function fieldsTable(entries: FieldsOfDataset[], className: string): HTMLElement {
  const chips = (entry: FieldsOfDataset): Child =>
    h(
      "ul",
      { class: "chips" },
      entry.fields.map((field) =>
        h(
          "li",
          {},
          h("a", { href: links.fields(entry.dataset.namespace, entry.dataset.name, field) }, field),
          entry.origins?.[field]?.length ? h("span", { class: "origin" }, entry.origins[field].join(", ")) : null,
        ),
      ),
    );
  return table(
    ["Dataset", "Namespace", "Fields"],
    entries.map((entry) => [
      datasetLink(entry.dataset.namespace, entry.dataset.name),
      h("span", { class: "wrap muted" }, entry.dataset.namespace),
      chips(entry),
    ]),
    { class: className },
  );
}

export async function renderTag(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const tag = params.get("tag") ?? "";
  if (!tag) {
    replace(root, notice("Pick a tag first: a dataset's page shows its tags and its fields' tags."));
    return;
  }
  // Not the carried `levels`: a graph's neighbourhood is not how far tagged data travels.
  const asked = Number.parseInt(params.get("reach") ?? "", 10);
  const levels = Number.isFinite(asked) && asked >= 1 ? asked : DEFAULT_LEVELS;
  const input = h("input", { type: "number", name: "reach", min: 1, max: 100, value: levels, "aria-label": "Hops" });
  input.addEventListener("change", () => {
    const value = Number.parseInt(input.value, 10);
    if (Number.isFinite(value) && value >= 1) go("tag", { ...paramsObject(params), reach: String(value) });
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
        h("h1", {}, h("span", { class: "badge badge-tag" }, "tag"), " ", h("span", { class: "entity-name" }, tag)),
        h("p", { class: "controls" }, h("label", { class: "control" }, "Hops ", input)),
        watchControl({ tag }),
      ),
      body,
    ),
  );
  try {
    const reach = await api.tagReach(tag, levels);
    replace(
      body,
      section(
        "Tagged",
        reach.tagged.length ? fieldsTable(reach.tagged, "tagged") : notice("No dataset or field carries this tag now."),
      ),
      section(
        `Where its data went (${counted(reach.levels, "hop")})`,
        reach.reach.length
          ? fieldsTable(reach.reach, "reach")
          : notice("No field edge leads on from the tagged fields."),
      ),
    );
  } catch (error) {
    replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
  }
}
