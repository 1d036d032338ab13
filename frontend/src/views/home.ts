// The home page: the estate at a glance — the search box, namespaces with how many datasets
// and jobs they hold, the datasets written most recently, and each job's latest run with the
// failed ones first. Each list is a page of its API list, with its own Previous and Next.

import { api } from "../api";
import { type Child, h, notice, replace, table, time } from "../dom";
import { go, links } from "../route";
import { datasetLink, errorText, jobLink, namespaceLabel, runState, section } from "./common";

/** Rows per page of each list. */
export const HOME_PAGE_ROWS = 10;

interface Page {
  rows: Child[][];
  total: number;
  /** A line above the table (the failed runs' count). */
  summary?: string;
}

/** A card listing `load(offset)`'s rows under `headers`, paged by HOME_PAGE_ROWS. */
function pagedList(id: string, title: string, headers: string[], empty: string, load: (offset: number) => Promise<Page>): HTMLElement {
  const body = h("div", {}, notice("Loading…"));
  const card = section(title, body);
  card.id = id;
  const show = async (offset: number) => {
    try {
      const page = await load(offset);
      if (!page.total) {
        replace(body, notice(empty));
        return;
      }
      const last = Math.min(offset + page.rows.length, page.total);
      const previous = h("button", { type: "button", name: "previous", disabled: offset === 0 }, "Previous");
      const next = h("button", { type: "button", name: "next", disabled: last >= page.total }, "Next");
      previous.addEventListener("click", () => void show(Math.max(0, offset - HOME_PAGE_ROWS)));
      next.addEventListener("click", () => void show(offset + HOME_PAGE_ROWS));
      replace(
        body,
        page.summary ? h("p", { class: "summary-line" }, page.summary) : null,
        table(headers, page.rows),
        h("p", { class: "pager" }, previous, h("span", { class: "muted page-range" }, `${offset + 1}–${last} of ${page.total}`), next),
      );
    } catch (error) {
      replace(body, h("p", { class: "notice notice-error", role: "alert" }, errorText(error)));
    }
  };
  void show(0);
  return card;
}

export function renderHome(root: HTMLElement): Promise<void> {
  const input = h("input", {
    type: "search",
    name: "q",
    placeholder: "Name or part of a name",
    "aria-label": "Search datasets and jobs",
    autofocus: true,
  });
  const form = h("form", { class: "search-form", role: "search" }, input, h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go("search", { q: input.value.trim() });
  });
  const namespaces = pagedList("home-namespaces", "Namespaces", ["Namespace", "Datasets", "Jobs", "Updated"], "Nothing has been recorded yet.", async (offset) => {
    const page = await api.namespaceCounts(HOME_PAGE_ROWS, offset);
    return {
      total: page.totalCount,
      rows: page.namespaces.map((ns) => [namespaceLabel(ns.name), ns.datasets, ns.jobs, time(ns.updatedAt)]),
    };
  });
  const written = pagedList("home-written", "Recently written datasets", ["Dataset", "Namespace", "Last written"], "No run has written a dataset yet.", async (offset) => {
    const page = await api.recentlyWritten(HOME_PAGE_ROWS, offset);
    return {
      total: page.totalCount,
      rows: page.datasets.map((ds) => [datasetLink(ds.namespace, ds.name), namespaceLabel(ds.namespace), time(ds.writtenAt)]),
    };
  });
  const runs = pagedList("home-runs", "Latest runs", ["State", "Job", "Namespace", "Started", "Ended", "Run"], "No run has been recorded yet.", async (offset) => {
    const page = await api.latestRuns(HOME_PAGE_ROWS, offset);
    return {
      total: page.totalCount,
      summary: page.failedCount
        ? `The latest run of ${page.failedCount} of ${page.totalCount} jobs failed or was aborted; they come first.`
        : `The latest run of every one of the ${page.totalCount} jobs did not fail.`,
      rows: page.runs.map((run) => [
        runState(run.state),
        jobLink(run.job.namespace, run.job.name),
        namespaceLabel(run.job.namespace),
        time(run.startedAt),
        time(run.endedAt),
        h("a", { href: links.run(run.id), title: "The runs that made what it read" }, h("code", {}, run.id.slice(0, 8))),
      ]),
    };
  });
  replace(
    root,
    h(
      "section",
      { class: "page home" },
      h("h1", {}, "Find a dataset or a job"),
      form,
      h("div", { class: "home-grid" }, runs, written, namespaces),
    ),
  );
  return Promise.resolve();
}
