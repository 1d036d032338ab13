// When a window holds nothing: say whether the dataset or job has history at all, when its
// latest run was, and offer the window that shows it in one click.

import { api, type Run } from "../api";
import { h, time } from "../dom";
import { ALL_TIME, go, paramsObject, windowQuery, windowSpan } from "../route";

/** Runs asked about to find the newest: the newest run of each of this many relations. */
const RELATIONS_ASKED = 12;

interface Target {
  kind: "dataset" | "job";
  namespace: string;
  name: string;
}

function moment(run: Run): number {
  const at = run.endedAt ?? run.startedAt ?? run.createdAt;
  return at ? Date.parse(at) : Number.NaN;
}

/** The newest run that touched `target` at any time, or null when none did. */
export async function latestRun(target: Target): Promise<Run | null> {
  const query = { start: "0", end: "now", levels: 1, collapse: ["run", "access", "component"] };
  const lineage =
    target.kind === "dataset"
      ? await api.datasetLineage(target.namespace, target.name, query)
      : await api.jobLineage(target.namespace, target.name, query);
  const own = lineage.relations.filter((relation) => {
    const entity = target.kind === "dataset" ? lineage.data[relation.data]?.entityId : lineage.programs[relation.program]?.entityId;
    return entity?.namespace === target.namespace && entity.name === target.name;
  });
  // Each relation lists its runs newest first.
  const newest = [...new Set(own.map((relation) => relation.runs[0]).filter((id): id is string => Boolean(id)))];
  const runs = await Promise.all(newest.slice(0, RELATIONS_ASKED).map((id) => api.run(id)));
  const dated = runs.filter((run) => Number.isFinite(moment(run)));
  return dated.sort((a, b) => moment(b) - moment(a))[0] ?? null;
}

/**
 * A notice for an empty window: the latest run and a button for the window of the same length
 * ending just after it, plus one for all time; or that nothing ever touched it. Null when the
 * window is already all time or the question fails (the view has said the window is empty).
 */
export async function latestRunHint(target: Target, params: URLSearchParams, view: string): Promise<HTMLElement | null> {
  if (windowQuery(params).start === "0") return null;
  let run: Run | null;
  try {
    run = await latestRun(target);
  } catch {
    return null;
  }
  if (!run) return h("p", { class: "notice", id: "history-hint" }, "Nothing has been recorded for it at any time.");
  const at = moment(run);
  const span = windowSpan(params);
  const end = new Date(at + 60_000).toISOString();
  const start = new Date(at + 60_000 - span).toISOString();
  const shift = h("button", { type: "button", name: "show-latest" }, "Show the window up to it");
  shift.addEventListener("click", () => go(view, { ...paramsObject(params), window: "custom", start, end }));
  const all = h("button", { type: "button", name: "show-all-time" }, "All time");
  all.addEventListener("click", () => go(view, { ...paramsObject(params), window: ALL_TIME, start: "", end: "" }));
  return h(
    "p",
    { class: "notice", id: "history-hint" },
    "Nothing in this window, but it has history: its latest run ended ",
    time(run.endedAt ?? run.startedAt ?? run.createdAt),
    ". ",
    shift,
    " ",
    all,
  );
}
