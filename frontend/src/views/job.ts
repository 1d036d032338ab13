// A job's page: its runs with states and times, its inputs and outputs, its parent workflow;
// for a workflow, the jobs and job runs inside its runs in the window.

import { api, type DatasetRef, type Job, type RunSummary, type WorkflowContents } from "../api";
import { counted, h, notice, replace, table, time } from "../dom";
import { go, href, links, paramsObject, windowQuery } from "../route";
import { windowControl } from "../window-control";
import { badge, datasetLink, errorText, jobLink, namespaceLabel, runState, section } from "./common";
import { facetList } from "./facets";
import { sqlBlock } from "./sql-code";

const RUNS_SHOWN = 50;

/** The parent (workflow) job: Marquez's `parentJobName`, else the latest run's parent facet. */
function parentOf(job: Job): { namespace: string; name: string } | null {
  const facet = (job.latestRun as { facets?: Record<string, unknown> } | null | undefined)?.facets?.parent as
    | { job?: { namespace?: string; name?: string } }
    | undefined;
  if (facet?.job?.namespace && facet.job.name) return { namespace: facet.job.namespace, name: facet.job.name };
  if (job.parentJobName) return { namespace: job.namespace, name: job.parentJobName };
  return null;
}

function datasets(refs: DatasetRef[] | undefined, empty: string): HTMLElement {
  if (!refs?.length) return notice(empty);
  return table(
    ["Dataset", "Namespace"],
    refs.map((ref) => [datasetLink(ref.namespace, ref.name), h("span", { class: "wrap muted" }, ref.namespace)]),
  );
}

function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  return seconds < 120 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`;
}

function stateOf(run: RunSummary): HTMLElement {
  return runState(run.state);
}

function contentsOf(contents: WorkflowContents): HTMLElement[] {
  if (!contents.runs.length) return [notice("No run of this workflow in this window.")];
  return [
    h("h3", {}, "Jobs"),
    contents.jobs.length
      ? table(
          ["Job", "Namespace", "Runs in window", "Latest state", "Latest start"],
          contents.jobs.map((job) => [
            jobLink(job.namespace, job.name),
            h("span", { class: "wrap muted" }, job.namespace),
            String(job.runs),
            stateOf(job.latestRun),
            time(job.latestRun.startedAt),
          ]),
          { class: "workflow-jobs" },
        )
      : notice("Its runs in this window ran no jobs."),
    h("h3", {}, "Runs"),
    table(
      ["Workflow run", "State", "Started", "Jobs run inside it"],
      contents.runs.map((run) => [
        h("a", { href: links.run(run.id) }, h("code", {}, run.id)),
        stateOf(run),
        time(run.startedAt),
        run.jobRuns.length
          ? h(
              "ul",
              { class: "job-runs" },
              run.jobRuns.map((jobRun) => h("li", {}, jobLink(jobRun.job.namespace, jobRun.job.name), " ", stateOf(jobRun))),
            )
          : h("span", { class: "muted" }, "none"),
      ]),
      { class: "workflow-runs" },
    ),
  ];
}

/** The query of the job's `sql` facet, when it has one. */
function sqlOf(job: Job): string | null {
  const facet = job.facets?.sql as { query?: unknown } | undefined;
  return typeof facet?.query === "string" ? facet.query : null;
}

export async function renderJob(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const namespace = params.get("ns") ?? "";
  const name = params.get("name") ?? "";
  const body = h("div", { class: "page" }, notice("Loading…"));
  replace(root, body);
  try {
    const [job, runs] = await Promise.all([api.job(namespace, name), api.jobRuns(namespace, name, RUNS_SHOWN)]);
    const parent = parentOf(job);
    const sql = sqlOf(job);
    const contents = await api.workflowContents(namespace, name, windowQuery(params));
    const kind = contents.isWorkflow || (job.type ?? "job").toLowerCase() === "workflow" ? "workflow" : "job";
    const change = (changes: Record<string, string>) => go("job", { ...paramsObject(params), ...changes });
    replace(
      body,
      h(
        "header",
        { class: "page-head" },
        h("h1", {}, badge(kind), " ", h("span", { class: "entity-name" }, job.name)),
        h("p", { class: "muted wrap" }, namespaceLabel(job.namespace)),
        job.description ? h("p", {}, job.description) : null,
        h(
          "p",
          { class: "actions" },
          h("a", { class: "button", href: links.graph("job", namespace, name) }, "Lineage graph"),
          kind === "workflow"
            ? h(
                "a",
                { class: "button", href: href("graph", { type: "job", ns: namespace, name, rollup: "workflow" }), "data-exact": "" },
                "Graph, rolled up",
              )
            : null,
        ),
        h(
          "p",
          { id: "parent-workflow" },
          "Parent workflow: ",
          parent ? jobLink(parent.namespace, parent.name) : h("span", { class: "muted" }, "none"),
        ),
      ),
      sql === null ? null : section("SQL", sqlBlock(sql)),
      kind === "workflow"
        ? section("Inside this workflow", h("div", { class: "controls" }, windowControl(params, change)), contentsOf(contents))
        : null,
      section(
        "Runs",
        runs.runs.length
          ? table(
              ["State", "Started", "Ended", "Duration", "Run"],
              runs.runs.map((run) => [
                runState(run.state),
                time(run.startedAt),
                time(run.endedAt),
                duration(run.durationMs),
                h("a", { href: links.run(run.id), title: "The runs that made what it read" }, h("code", {}, run.id)),
              ]),
              { class: "runs" },
            )
          : notice("No runs recorded."),
        runs.totalCount && runs.totalCount > runs.runs.length
          ? h("p", { class: "muted" }, `The newest ${runs.runs.length} of ${counted(runs.totalCount, "run")}.`)
          : null,
      ),
      section("Inputs", datasets(job.inputs, "No inputs.")),
      section("Outputs", datasets(job.outputs, "No outputs.")),
      section("Facets", facetList(job.facets)),
    );
  } catch (error) {
    replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
  }
}
