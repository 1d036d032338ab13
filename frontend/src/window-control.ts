// The time-window control shared by the graph and the field view: presets or custom bounds.

import { h } from "./dom";
import { DEFAULT_WINDOW, WINDOW_PRESETS } from "./route";

/** `datetime-local` value (local time) for an ISO instant, or "" when it does not parse. */
function toLocalInput(iso: string | null): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

function toIso(localValue: string): string {
  return localValue ? new Date(localValue).toISOString() : "";
}

/**
 * A labelled control for the window; `onChange` gets the new route parameters
 * (`window`, and `start`/`end` for a custom window).
 */
export function windowControl(
  params: URLSearchParams,
  onChange: (changes: Record<string, string>) => void,
): HTMLElement {
  const current = params.get("window") ?? DEFAULT_WINDOW;
  const select = h(
    "select",
    { name: "window", "aria-label": "Time window" },
    [...WINDOW_PRESETS, "custom"].map((value) =>
      h("option", { value, selected: value === current }, value === "custom" ? "custom…" : `last ${value}`),
    ),
  );
  const start = h("input", { type: "datetime-local", name: "start", "aria-label": "Window start" });
  const end = h("input", { type: "datetime-local", name: "end", "aria-label": "Window end" });
  start.value = toLocalInput(params.get("start"));
  end.value = toLocalInput(params.get("end"));
  const custom = h("span", { class: "custom-window", hidden: current !== "custom" }, start, " – ", end);
  const applyCustom = () => {
    if (start.value && end.value) {
      onChange({ window: "custom", start: toIso(start.value), end: toIso(end.value) });
    }
  };
  select.addEventListener("change", () => {
    if (select.value === "custom") {
      custom.hidden = false;
      if (!start.value) start.value = toLocalInput(new Date(Date.now() - 7 * 86_400_000).toISOString());
      // The input holds whole minutes and the end is exclusive: round up, so runs of the
      // current minute stay in.
      if (!end.value) end.value = toLocalInput(new Date(Date.now() + 60_000).toISOString());
      applyCustom();
    } else {
      onChange({ window: select.value, start: "", end: "" });
    }
  });
  start.addEventListener("change", applyCustom);
  end.addEventListener("change", applyCustom);
  return h("label", { class: "control" }, "Window ", select, custom);
}
