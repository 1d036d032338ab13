// The whole view state lives in the URL hash (`#/<view>?<params>`), so any view can be shared
// or bookmarked and the browser's back button walks through what the user looked at.

export interface Route {
  view: string;
  params: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, "");
  const at = hash.indexOf("?");
  const view = decodeURIComponent(at < 0 ? hash : hash.slice(0, at)) || "search";
  return { view, params: new URLSearchParams(at < 0 ? "" : hash.slice(at + 1)) };
}

/** The href of a view with its parameters (empty values are left out). */
export function href(view: string, params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return `#/${view}${text ? `?${text}` : ""}`;
}

export function go(view: string, params: Record<string, string | number | null | undefined>): void {
  location.hash = href(view, params);
}

/** Links to the pages of a dataset and a job. */
export const links = {
  dataset: (ns: string, name: string) => href("dataset", { ns, name }),
  job: (ns: string, name: string) => href("job", { ns, name }),
  graph: (type: "dataset" | "job", ns: string, name: string) => href("graph", { type, ns, name }),
  fields: (ns: string, name: string, field?: string) => href("fields", { ns, name, field }),
};

// ---- time window (DESIGN §4.1) ----

export const WINDOW_PRESETS = ["1h", "24h", "7d", "30d"] as const;
export const DEFAULT_WINDOW = "7d";

/** The `start`/`end` query of the window named in the route (a preset or custom bounds). */
export function windowQuery(params: URLSearchParams): { start: string; end: string } {
  const window = params.get("window") ?? DEFAULT_WINDOW;
  if (window === "custom") {
    return { start: params.get("start") ?? "now-7d", end: params.get("end") ?? "now" };
  }
  const preset = (WINDOW_PRESETS as readonly string[]).includes(window) ? window : DEFAULT_WINDOW;
  return { start: `now-${preset}`, end: "now" };
}

/** The route's parameters as a plain object, for building a changed copy. */
export function paramsObject(params: URLSearchParams): Record<string, string> {
  return Object.fromEntries(params.entries());
}
