// A dataset's page: fields, facets, writers and readers in a window, and their recent runs.

import { api, type LineageResponse, type Run } from "../api";
import { h, notice, replace, table, time } from "../dom";
import { go, historyQuery, links, paramsObject } from "../route";
import { asOfControl, windowControl } from "../window-control";
import { badge, errorText, jobLink, namespaceLabel, runState, section } from "./common";
import { ownersAndTags, qualitySection, versionsSection } from "./dataset-history";
import { latestRun, latestRunHint } from "./latest-run";
import { facetList } from "./facets";
import { watchControl } from "../watch-control";
import { tagChip } from "./tag";

const RECENT_RUNS = 20;
const JOBS_ASKED_FOR_RUNS = 10;

interface Program {
  key: string;
  type: string;
  namespace: string;
  name: string;
  accesses: Set<string>;
  runs: Set<string>;
}

/** The jobs next to the dataset, with how they touched it (reads and writes, runs). */
function programsOf(lineage: LineageResponse, namespace: string, name: string): Program[] {
  const centre = Object.entries(lineage.data).find(
    ([, entry]) => entry.entityId.namespace === namespace && entry.entityId.name === name,
  )?.[0];
  const programs = new Map<string, Program>();
  for (const relation of lineage.relations) {
    if (relation.data !== centre) continue;
    const entity = lineage.programs[relation.program]?.entityId;
    if (!entity) continue;
    const program = programs.get(relation.program) ?? {
      key: relation.program,
      type: entity.type,
      namespace: entity.namespace,
      name: entity.name,
      accesses: new Set<string>(),
      runs: new Set<string>(),
    };
    relation.accesses.forEach((access) => program.accesses.add(access));
    relation.runs.forEach((run) => program.runs.add(run));
    programs.set(relation.program, program);
  }
  return [...programs.values()].sort((a, b) => a.name.localeCompare(b.name));
}

async function recentRuns(programs: Program[]): Promise<{ run: Run; program: Program }[]> {
  const withRuns = programs.filter((program) => program.runs.size).slice(0, JOBS_ASKED_FOR_RUNS);
  const lists = await Promise.all(
    withRuns.map(async (program) => {
      const response = await api.jobRuns(program.namespace, program.name, RECENT_RUNS);
      return response.runs.filter((run) => program.runs.has(run.id)).map((run) => ({ run, program }));
    }),
  );
  const key = (run: Run) => run.startedAt ?? run.createdAt ?? "";
  return lists
    .flat()
    .sort((a, b) => key(b.run).localeCompare(key(a.run)))
    .slice(0, RECENT_RUNS);
}

/**
 * When a run last read or wrote the dataset, at any time: the time its data last moved, which
 * the row's own update time (when an event last named it) is not.
 */
async function showLastRun(line: HTMLElement, namespace: string, name: string): Promise<void> {
  try {
    const run = await latestRun({ kind: "dataset", namespace, name });
    if (!run) {
      replace(line, "No run has read or written it.");
      return;
    }
    const ended = Boolean(run.endedAt);
    replace(line, `Last run ${ended ? "ended" : "started"} `, time(ended ? run.endedAt : (run.startedAt ?? run.createdAt)), " · ", runState(run.state));
  } catch (error) {
    replace(line, "Last run: ", errorText(error));
  }
}

export async function renderDataset(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const namespace = params.get("ns") ?? "";
  const name = params.get("name") ?? "";
  const change = (changes: Record<string, string>) => go("dataset", { ...paramsObject(params), ...changes });
  const window = windowControl(params, change);
  const io = h("div", {}, notice("Loading writers and readers…"));
  const runs = h("div", {}, notice("Loading runs…"));
  const quality = h("div", { id: "dataset-quality" }, notice("Loading runs…"));
  const body = h("div", { class: "page" }, notice("Loading…"));
  replace(root, body);
  try {
    const dataset = await api.dataset(namespace, name);
    const fields = dataset.fields ?? [];
    const lastRun = h("p", { class: "muted", id: "last-run" }, "Last run: looking…");
    void showLastRun(lastRun, namespace, name);
    replace(
      body,
      h(
        "header",
        { class: "page-head" },
        h("h1", {}, badge("dataset"), " ", h("span", { class: "entity-name" }, dataset.name)),
        h("p", { class: "muted wrap" }, namespaceLabel(dataset.namespace)),
        dataset.description ? h("p", {}, dataset.description) : null,
        ownersAndTags(dataset, tagChip),
        h(
          "p",
          { class: "actions" },
          h("a", { class: "button", href: links.graph("dataset", namespace, name) }, "Lineage graph"),
          h("a", { class: "button", href: links.fields(namespace, name) }, "Field lineage"),
          h("a", { class: "button", href: links.impact(namespace, name) }, "Impact"),
        ),
        watchControl({ dataset: { namespace: dataset.namespace, name: dataset.name } }),
        lastRun,
      ),
      section(
        "Fields",
        fields.length
          ? table(
              ["Name", "Type", "Description", "Tags", ""],
              fields.map((field) => [
                h("span", { class: field.tags?.length ? "entity tagged" : "entity" }, field.name),
                field.type ?? "",
                field.description ?? "",
                h("span", { class: "tags" }, (field.tags ?? []).map(tagChip)),
                h("a", { href: links.fields(namespace, name, field.name) }, "lineage"),
              ]),
              { class: "fields" },
            )
          : notice("No fields are known for this dataset."),
      ),
      section("Versions", versionsSection(namespace, name)),
      section("Writers and readers", h("div", { class: "controls" }, window, asOfControl(params, change)), io),
      section("Recent runs", runs),
      section("Data quality", quality),
      section("Facets", facetList(dataset.facets)),
    );
  } catch (error) {
    replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
    return;
  }
  try {
    const lineage = await api.datasetLineage(namespace, name, { ...historyQuery(params), levels: 1 });
    const programs = programsOf(lineage, namespace, name);
    const list = (access: string) => programs.filter((program) => program.accesses.has(access));
    const rows = (access: string) =>
      list(access).map((program) => [
        badge(program.type),
        jobLink(program.namespace, program.name),
        h("span", { class: "wrap muted" }, program.namespace),
        String(program.runs.size),
      ]);
    const headers = ["Kind", "Job", "Namespace", "Runs in window"];
    const hint = programs.length ? null : await latestRunHint({ kind: "dataset", namespace, name }, params, "dataset");
    replace(
      io,
      hint,
      h("h3", {}, "Written by"),
      list("write").length ? table(headers, rows("write"), { class: "writers" }) : notice("No writer in this window."),
      h("h3", {}, "Read by"),
      list("read").length ? table(headers, rows("read"), { class: "readers" }) : notice("No reader in this window."),
    );
    const recent = await recentRuns(programs);
    qualitySection(quality, recent.map(({ run, program }) => ({ run, job: program })), namespace, name);
    replace(
      runs,
      recent.length
        ? table(
            ["Job", "Access", "State", "Started", "Ended", "Run"],
            recent.map(({ run, program }) => [
              jobLink(program.namespace, program.name),
              [...program.accesses].sort().join(", "),
              runState(run.state),
              time(run.startedAt),
              time(run.endedAt),
              h("a", { href: links.run(run.id), title: "The runs that made what it read" }, h("code", {}, run.id)),
            ]),
            { class: "runs" },
          )
        : notice("No runs touched this dataset in this window."),
    );
  } catch (error) {
    replace(io, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
    replace(runs, "");
    replace(quality, "");
  }
}
