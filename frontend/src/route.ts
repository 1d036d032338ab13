// The whole view state lives in the URL hash (`#/<view>?<params>`), so any view can be shared
// or bookmarked and the browser's back button walks through what the user looked at. The
// controls a user sets once (window, as-of time, levels, direction, collapse, rollup, graph display) are
// carried by every link to every view, so moving around never drops them.

export interface Route {
  view: string;
  params: URLSearchParams;
}

/** Parameters that follow the user from view to view; each view reads those it uses. */
export const CARRIED = [
  "window",
  "start",
  "end",
  "asOf",
  "levels",
  "direction",
  "collapse",
  "rollup",
  "columns",
  "namespaces",
  "hideKinds",
  "hideNs",
] as const;

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, "");
  const at = hash.indexOf("?");
  const view = decodeURIComponent(at < 0 ? hash : hash.slice(0, at)) || "home";
  return { view, params: new URLSearchParams(at < 0 ? "" : hash.slice(at + 1)) };
}

type Params = Record<string, string | number | null | undefined>;

/** The carried parameters of the current URL. */
export function carried(): Record<string, string> {
  const { params } = currentRoute();
  const kept: Record<string, string> = {};
  for (const key of CARRIED) {
    const value = params.get(key);
    if (value) kept[key] = value;
  }
  return kept;
}

/** The href of a view with its parameters (empty values are left out), carrying the current
 * URL's window and graph settings unless `params` sets them. Keys are sorted, so one state
 * has one URL and setting it twice adds one history entry. */
export function href(view: string, params: Params): string {
  const search = new URLSearchParams();
  const all = { ...carried(), ...params };
  for (const key of Object.keys(all).sort()) {
    const value = all[key];
    if (value !== null && value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return `#/${view}${text ? `?${text}` : ""}`;
}

export function go(view: string, params: Params): void {
  location.hash = href(view, params);
}

/** Record a change of display (filters, search, selection) in the URL without drawing the
 * view again: reload and sharing keep it. */
export function note(changes: Params): void {
  const { view, params } = currentRoute();
  const next = { ...Object.fromEntries(params.entries()), ...changes };
  history.replaceState(history.state, "", href(view, next));
}

/** Links to the pages of a dataset and a job, and to their graphs and field views. */
export const links = {
  dataset: (ns: string, name: string) => href("dataset", { ns, name }),
  job: (ns: string, name: string) => href("job", { ns, name }),
  graph: (type: "dataset" | "job", ns: string, name: string) => href("graph", { type, ns, name }),
  fields: (ns: string, name: string, field?: string) => href("fields", { ns, name, field }),
  run: (id: string) => href("run", { id }),
  tag: (tag: string) => href("tag", { tag }),
  impact: (ns: string, name: string, field?: string) => href("impact", { ns, name, field }),
};

// ---- time window (design §4.1) ----

export const WINDOW_PRESETS = ["1h", "24h", "7d", "30d", "90d", "365d"] as const;
export const ALL_TIME = "all";
export const DEFAULT_WINDOW = "7d";

/** The `start`/`end` query of the window named in the route (a preset, all time or custom
 * bounds). All time starts at the epoch, the earliest instant the API takes. */
export function windowQuery(params: URLSearchParams): { start: string; end: string } {
  const window = params.get("window") ?? DEFAULT_WINDOW;
  if (window === "custom") {
    return { start: params.get("start") ?? "now-7d", end: params.get("end") ?? "now" };
  }
  if (window === ALL_TIME) return { start: "0", end: "now" };
  const preset = (WINDOW_PRESETS as readonly string[]).includes(window) ? window : DEFAULT_WINDOW;
  return { start: `now-${preset}`, end: "now" };
}

/** The window and the "as of" time (`asOf`: the lineage as it stood then; design §4.5), for
 * the endpoints that take both. */
export function historyQuery(params: URLSearchParams): { start: string; end: string; asOf: string | null } {
  return { ...windowQuery(params), asOf: params.get("asOf") };
}

/** The window's length in milliseconds, for offering "the same span, ending then". */
export function windowSpan(params: URLSearchParams): number {
  const { start, end } = windowQuery(params);
  const preset = /^now-(\d+)([hd])$/.exec(start);
  if (preset) return Number(preset[1]) * (preset[2] === "h" ? 3_600_000 : 86_400_000);
  const from = Date.parse(start);
  const to = end === "now" ? Date.now() : Date.parse(end);
  return Number.isFinite(from) && Number.isFinite(to) && to > from ? to - from : 7 * 86_400_000;
}

/** The route's parameters as a plain object, for building a changed copy. */
export function paramsObject(params: URLSearchParams): Record<string, string> {
  return Object.fromEntries(params.entries());
}
