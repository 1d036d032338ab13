// The time-window control shared by every view: presets, all time, or custom bounds.

import { h } from "./dom";
import { ALL_TIME, DEFAULT_WINDOW, WINDOW_PRESETS } from "./route";

/** `datetime-local` value (local time) for an ISO instant, or "" when it does not parse. */
export function toLocalInput(iso: string | null): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

function toIso(localValue: string): string {
  return localValue ? new Date(localValue).toISOString() : "";
}

function presetLabel(value: string): string {
  if (value === "custom") return "custom…";
  if (value === ALL_TIME) return "all time";
  return `last ${value}`;
}

/**
 * A labelled control for the window; `onChange` gets the new route parameters (`window`, and
 * `start`/`end` for a custom window). The date inputs apply when they lose focus or on Enter,
 * never while a date is being typed.
 */
export function windowControl(
  params: URLSearchParams,
  onChange: (changes: Record<string, string>) => void,
): HTMLElement {
  const current = params.get("window") ?? DEFAULT_WINDOW;
  const select = h(
    "select",
    { name: "window", "aria-label": "Time window" },
    [...WINDOW_PRESETS, ALL_TIME, "custom"].map((value) =>
      h("option", { value, selected: value === current }, presetLabel(value)),
    ),
  );
  const start = h("input", { type: "datetime-local", name: "start", "aria-label": "Window start" });
  const end = h("input", { type: "datetime-local", name: "end", "aria-label": "Window end" });
  start.value = toLocalInput(params.get("start"));
  end.value = toLocalInput(params.get("end"));
  const custom = h("span", { class: "custom-window", hidden: current !== "custom" }, start, " – ", end);
  let applied = current === "custom" ? `${start.value}|${end.value}` : "";
  const applyCustom = () => {
    const value = `${start.value}|${end.value}`;
    if (start.value && end.value && value !== applied) {
      applied = value;
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
  for (const input of [start, end]) {
    input.addEventListener("blur", applyCustom);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        applyCustom();
      }
    });
  }
  return h("label", { class: "control" }, "Window ", select, custom);
}

/**
 * One instant picked with a date input (local time, stored as UTC ISO), applied on blur or
 * Enter like the window's dates; `clear` empties it. `onChange` gets the new ISO value, or ""
 * when cleared.
 */
export function instantInput(
  name: string,
  label: string,
  value: string | null,
  clear: string,
  onChange: (iso: string) => void,
): HTMLElement {
  const input = h("input", { type: "datetime-local", name, "aria-label": label });
  input.value = toLocalInput(value);
  let applied = input.value;
  const apply = () => {
    if (input.value === applied) return;
    applied = input.value;
    onChange(toIso(input.value));
  };
  input.addEventListener("blur", apply);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      apply();
    }
  });
  const reset = h("button", { type: "button", name: `${name}-clear`, hidden: !value }, clear);
  reset.addEventListener("click", () => {
    input.value = "";
    apply();
  });
  return h("span", { class: "instant" }, input, reset);
}

/** The "as of" control: the lineage as it stood at a time (`asOf`), empty for now. */
export function asOfControl(params: URLSearchParams, onChange: (changes: Record<string, string>) => void): HTMLElement {
  return h(
    "label",
    { class: "control", title: "The lineage as it stood at this time; the window ends then" },
    "As of ",
    instantInput("asOf", "As of", params.get("asOf"), "now", (iso) => onChange({ asOf: iso })),
  );
}
