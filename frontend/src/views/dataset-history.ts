// A dataset's history on its page: its versions over time with what changed in the schema and
// the run that wrote each; the data-quality assertions runs checked on it (the
// `dataQualityAssertions` input facet, as `dbt-ol test` sends), passed or failed; its owners
// and tags from the `ownership` and `tags` dataset facets.

import { api, type Dataset, type DatasetVersion, type Run } from "../api";
import { type Child, counted, h, notice, replace, table, time } from "../dom";
import { links } from "../route";
import { schemaChanges } from "../schema-diff";
import { errorText, jobLink } from "./common";

/** Versions per page. */
const VERSIONS_PER_PAGE = 10;

const typed = (name: string, type: string | null | undefined) => (type ? `${name} ${type}` : name);

/** What a version changed against the one before it (null: the first version). */
function changesCell(version: DatasetVersion, before: DatasetVersion | null): Child {
  const fields = version.fields ?? [];
  if (!before) return h("span", { class: "muted" }, `First version: ${counted(fields.length, "field")}`);
  const { added, removed, retyped } = schemaChanges(before.fields ?? [], fields);
  if (!added.length && !removed.length && !retyped.length) return h("span", { class: "muted" }, "No schema change");
  return h(
    "ul",
    { class: "schema-changes" },
    added.map((field) => h("li", { class: "field-added" }, "+ ", h("code", {}, typed(field.name, field.type)))),
    removed.map((field) => h("li", { class: "field-removed" }, "− ", h("code", {}, typed(field.name, field.type)))),
    retyped.map((change) =>
      h("li", { class: "field-retyped" }, "~ ", h("code", {}, change.name), `: ${change.from ?? "no type"} → ${change.to ?? "no type"}`),
    ),
  );
}

function writerCell(run: Run | null | undefined): Child {
  if (!run) return h("span", { class: "muted" }, "—");
  return [
    run.jobVersion ? jobLink(run.jobVersion.namespace, run.jobVersion.name) : null,
    " ",
    h("a", { href: links.run(run.id), title: "The run's graph" }, h("code", {}, run.id.slice(0, 8))),
  ];
}

/** The versions, newest first, a page at a time; each compared with the one before it. */
export function versionsSection(namespace: string, name: string): HTMLElement {
  const body = h("div", { id: "dataset-versions" }, notice("Loading versions…"));
  const show = async (offset: number) => {
    try {
      // One more than a page: the oldest shown is compared with the version before it.
      const page = await api.datasetVersions(namespace, name, VERSIONS_PER_PAGE + 1, offset);
      if (!page.versions.length) {
        replace(body, notice("No run has written a version of it."));
        return;
      }
      const shown = page.versions.slice(0, VERSIONS_PER_PAGE);
      const rows = shown.map((version, index) => [
        time(version.createdAt),
        writerCell(version.createdByRun),
        String((version.fields ?? []).length),
        changesCell(version, page.versions[index + 1] ?? null),
      ]);
      const last = offset + shown.length;
      const newer = h("button", { type: "button", name: "newer-versions", disabled: offset === 0 }, "Newer");
      const older = h("button", { type: "button", name: "older-versions", disabled: last >= page.totalCount }, "Older");
      newer.addEventListener("click", () => void show(Math.max(0, offset - VERSIONS_PER_PAGE)));
      older.addEventListener("click", () => void show(offset + VERSIONS_PER_PAGE));
      replace(
        body,
        table(["Written", "By run", "Fields", "Schema changes"], rows, { class: "versions" }),
        h("p", { class: "pager" }, newer, h("span", { class: "muted page-range" }, `${offset + 1}–${last} of ${page.totalCount}`), older),
      );
    } catch (error) {
      replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
    }
  };
  void show(0);
  return body;
}

/** One assertion of the `dataQualityAssertions` facet. */
interface Assertion {
  assertion: string;
  success: boolean;
  column?: string;
}

/** The assertions `run` checked on the dataset, from the input facet it read it with. */
function assertionsOf(run: Run, namespace: string, name: string): Assertion[] {
  const input = run.inputDatasetVersions?.find(
    (ref) => ref.datasetVersionId.namespace === namespace && ref.datasetVersionId.name === name,
  );
  const facet = input?.facets?.dataQualityAssertions as { assertions?: unknown } | undefined;
  if (!Array.isArray(facet?.assertions)) return [];
  return facet.assertions.filter(
    (item): item is Assertion =>
      typeof item === "object" && item !== null && typeof (item as Assertion).assertion === "string" && typeof (item as Assertion).success === "boolean",
  );
}

/** The runs that checked assertions on the dataset, newest first, each assertion passed or failed. */
export function qualitySection(target: HTMLElement, runs: { run: Run; job: { namespace: string; name: string } }[], namespace: string, name: string): void {
  const checked = runs
    .map(({ run, job }) => ({ run, job, assertions: assertionsOf(run, namespace, name) }))
    .filter((entry) => entry.assertions.length);
  if (!checked.length) {
    replace(target, notice("No run in this window checked data-quality assertions on it."));
    return;
  }
  replace(
    target,
    table(
      ["Result", "Assertions", "Job", "Run", "Started"],
      checked.map(({ run, job, assertions }) => {
        const failed = assertions.filter((item) => !item.success).length;
        return [
          h(
            "span",
            { class: `state ${failed ? "state-fail" : "state-complete"}` },
            failed ? `${failed} of ${assertions.length} failed` : `all ${assertions.length} passed`,
          ),
          h(
            "ul",
            { class: "assertions" },
            assertions.map((item) =>
              h(
                "li",
                { class: item.success ? "passed" : "failed" },
                item.success ? "✓ " : "✗ ",
                item.assertion,
                item.column ? h("span", { class: "muted" }, ` on `, h("code", {}, item.column)) : null,
              ),
            ),
          ),
          jobLink(job.namespace, job.name),
          h("a", { href: links.run(run.id), title: "The test run's graph" }, h("code", {}, run.id.slice(0, 8))),
          time(run.startedAt),
        ];
      }),
      { class: "quality" },
    ),
  );
}

interface Owner {
  name: string;
  type?: string;
}

/** Owners (the `ownership` facet) and tags (Marquez's, and the `tags` facet's key=value). */
export function ownersAndTags(dataset: Dataset, tagChip: (tag: string) => HTMLElement): HTMLElement | null {
  const ownership = dataset.facets?.ownership as { owners?: unknown } | undefined;
  const owners = (Array.isArray(ownership?.owners) ? ownership.owners : []).filter(
    (owner): owner is Owner => typeof owner === "object" && owner !== null && typeof (owner as Owner).name === "string",
  );
  const tagFacet = dataset.facets?.tags as { tags?: unknown } | undefined;
  const facetTags = (Array.isArray(tagFacet?.tags) ? tagFacet.tags : [])
    .filter((tag): tag is { key: string; value?: string } => typeof tag === "object" && tag !== null && typeof (tag as { key?: unknown }).key === "string")
    .map((tag) => (tag.value ? `${tag.key}=${tag.value}` : tag.key));
  const tags = dataset.tags ?? [];
  if (!owners.length && !tags.length && !facetTags.length) return null;
  return h(
    "div",
    { class: "owners-tags" },
    owners.length
      ? h("p", { id: "dataset-owners" }, "Owners: ", owners.map((owner, index) => [index ? ", " : "", owner.name, owner.type ? h("span", { class: "muted" }, ` (${owner.type})`) : null]))
      : null,
    tags.length || facetTags.length
      ? h("p", { class: "tags", id: "dataset-tags" }, "Tags: ", tags.map(tagChip), facetTags.map((tag) => h("span", { class: "tag tag-facet" }, tag)))
      : null,
  );
}
