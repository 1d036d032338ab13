// The impact list (`#/impact`): everything downstream of a dataset or a field — datasets and
// fields with their hop count, the jobs writing them on the way, their owners and the latest
// run of those jobs — filtered by hops, namespace and kind, and exported as CSV.

import { api, type ColumnGraph, type Run } from "../api";
import { counted, h, notice, replace, table } from "../dom";
import { fromRelations } from "../graph-model";
import { type Impacted, byHopsThenName, impactedDatasets, impactedFields, toCsv } from "../impact";
import { links, note, windowQuery } from "../route";
import { datasetLink, errorText, jobLink, namespaceLabel, runState, stateWord } from "./common";

const DEFAULT_LEVELS = 10;
/** Datasets and jobs asked about for owners and runs; a longer list shows dashes beyond. */
const DETAILS_ASKED = 100;

interface Row extends Impacted {
  owners: string[];
  latest: Run | null;
}

const key = (namespace: string, name: string) => JSON.stringify([namespace, name]);

/** The owners of each dataset (the `ownership` facet), by key. */
async function ownersOf(rows: Impacted[]): Promise<Map<string, string[]>> {
  const datasets = [...new Map(rows.map((row) => [key(row.namespace, row.name), row])).values()].slice(0, DETAILS_ASKED);
  const found = await Promise.all(
    datasets.map(async (row) => {
      const dataset = await api.dataset(row.namespace, row.name).catch(() => null);
      const owners = (dataset?.facets?.ownership as { owners?: { name?: unknown }[] } | undefined)?.owners;
      const names = Array.isArray(owners) ? owners.map((owner) => owner.name).filter((name): name is string => typeof name === "string") : [];
      return [key(row.namespace, row.name), names] as const;
    }),
  );
  return new Map(found);
}

/** The latest run of each job, by key. */
async function latestRuns(rows: Impacted[]): Promise<Map<string, Run>> {
  const jobs = [...new Map(rows.flatMap((row) => row.jobs).map((job) => [key(job.namespace, job.name), job])).values()].slice(0, DETAILS_ASKED);
  const found = await Promise.all(
    jobs.map(async (job) => {
      const runs = await api.jobRuns(job.namespace, job.name, 1).catch(() => null);
      return [key(job.namespace, job.name), runs?.runs[0] ?? null] as const;
    }),
  );
  return new Map(found.filter((entry): entry is readonly [string, Run] => entry[1] !== null));
}

const started = (run: Run | null) => run?.startedAt ?? run?.createdAt ?? "";

export async function renderImpact(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const namespace = params.get("ns") ?? "";
  const name = params.get("name") ?? "";
  const field = params.get("field");
  const levelsAsked = Number.parseInt(params.get("levels") ?? "", 10);
  const levels = Number.isFinite(levelsAsked) && levelsAsked >= 1 ? levelsAsked : DEFAULT_LEVELS;
  if (!namespace || !name) {
    replace(root, notice("Pick a dataset first: its page has an Impact button."));
    return;
  }
  const body = h("div", { id: "impact-body" }, notice("Walking downstream…"));
  const subject = field ? [datasetLink(namespace, name), ".", h("code", {}, field)] : datasetLink(namespace, name);
  replace(
    root,
    h(
      "section",
      { class: "page" },
      h("header", { class: "page-head" }, h("h1", {}, "Impact of ", subject), h("p", { class: "muted wrap" }, namespaceLabel(namespace))),
      h("p", { class: "muted" }, `What lies downstream, up to ${counted(levels, "level")} away in the window. A dataset's hops are the jobs between; a field's, the field edges.`),
      body,
    ),
  );
  let rows: Row[];
  try {
    const window = windowQuery(params);
    const [lineage, fields] = await Promise.all([
      api.datasetLineage(namespace, name, { ...window, levels, direction: "downstream" }),
      api
        .columnLineage(field ? `datasetField:${namespace}:${name}:${field}` : `dataset:${namespace}:${name}`, levels + 1)
        .catch((): ColumnGraph => ({ graph: [] })),
    ]);
    const datasets = impactedDatasets(fromRelations(lineage, { kind: "dataset", namespace, name }));
    const starts = new Set(
      fields.graph
        .filter((node) => node.data.namespace === namespace && node.data.dataset === name && (!field || node.data.field === field))
        .map((node) => node.id),
    );
    const impacted = [...(field ? [] : datasets), ...impactedFields(fields, starts, datasets)].sort(byHopsThenName);
    const [owners, runs] = await Promise.all([ownersOf(impacted), latestRuns(impacted)]);
    rows = impacted.map((row) => ({
      ...row,
      owners: owners.get(key(row.namespace, row.name)) ?? [],
      latest:
        row.jobs
          .map((job) => runs.get(key(job.namespace, job.name)) ?? null)
          .filter((run): run is Run => run !== null)
          .sort((a, b) => started(b).localeCompare(started(a)))[0] ?? null,
    }));
  } catch (error) {
    replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
    return;
  }
  if (!rows.length) {
    replace(body, notice("Nothing downstream of it in this window."));
    return;
  }
  const filters = {
    hops: params.get("hops") ?? "",
    kind: params.get("kind") ?? "",
    impactNs: params.get("impactNs") ?? "",
  };
  const choice = (name: string, label: string, options: [string, string][]) => {
    const select = h(
      "select",
      { name, "aria-label": label },
      options.map(([value, text]) => h("option", { value, selected: value === filters[name as keyof typeof filters] }, text)),
    );
    select.addEventListener("change", () => {
      filters[name as keyof typeof filters] = select.value;
      note({ [name]: select.value });
      show();
    });
    return h("label", { class: "control" }, `${label} `, select);
  };
  const maxHops = Math.max(...rows.map((row) => row.hops));
  const namespaces = [...new Set(rows.map((row) => row.namespace))].sort();
  const shown = () =>
    rows.filter(
      (row) =>
        (!filters.hops || row.hops === Number(filters.hops)) &&
        (!filters.kind || row.kind === filters.kind) &&
        (!filters.impactNs || row.namespace === filters.impactNs),
    );
  const download = h("button", { type: "button", name: "download-csv" }, "Download CSV");
  download.addEventListener("click", () => {
    const csv = toCsv(
      ["kind", "namespace", "dataset", "field", "hops", "jobs", "owners", "latest run state", "latest run started"],
      shown().map((row) => [
        row.kind,
        row.namespace,
        row.name,
        row.field ?? "",
        String(row.hops),
        row.jobs.map((job) => job.name).join("; "),
        row.owners.join("; "),
        row.latest ? stateWord(row.latest.state) : "",
        row.latest?.startedAt ?? "",
      ]),
    );
    const link = h("a", { href: URL.createObjectURL(new Blob([csv], { type: "text/csv" })), download: `impact-${field ? `${name}.${field}` : name}.csv` });
    link.click();
    URL.revokeObjectURL(link.href);
  });
  const count = h("span", { class: "muted", id: "impact-count" });
  const list = h("div", {});
  const show = () => {
    const visible = shown();
    replace(count, `${visible.length} of ${rows.length} shown`);
    replace(
      list,
      visible.length
        ? table(
            ["Kind", "Name", "Namespace", "Hops", "Jobs between", "Owners", "Latest run"],
            visible.map((row) => [
              row.kind,
              row.field
                ? h("a", { href: links.fields(row.namespace, row.name, row.field), class: "entity" }, `${row.name}.${row.field}`)
                : datasetLink(row.namespace, row.name),
              namespaceLabel(row.namespace),
              String(row.hops),
              row.jobs.map((job, index) => [index ? ", " : "", jobLink(job.namespace, job.name)]),
              row.owners.length ? row.owners.join(", ") : h("span", { class: "muted" }, "—"),
              row.latest ? runState(row.latest.state) : h("span", { class: "muted" }, "—"),
            ]),
            { class: "impact" },
          )
        : notice("Nothing matches these filters."),
    );
  };
  replace(
    body,
    h(
      "form",
      { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
      choice("hops", "Hops", [["", "any"], ...Array.from({ length: maxHops }, (_, i): [string, string] => [String(i + 1), String(i + 1)])]),
      choice("impactNs", "Namespace", [["", "any"], ...namespaces.map((ns): [string, string] => [ns, ns])]),
      choice("kind", "Kind", [["", "any"], ["dataset", "datasets"], ["field", "fields"]]),
      count,
      download,
    ),
    list,
  );
  show();
}
