// Pieces every view uses: error display (with a token form when the server wants one) and
// links to datasets and jobs.

import { ApiFailure, saveToken, savedToken } from "../api";
import { type Child, h } from "../dom";
import { platformIcon } from "../platforms";
import { links } from "../route";

/** What went wrong, in words; a 401/403 also offers a field for an API token. */
export function errorText(error: unknown): Child {
  if (error instanceof ApiFailure && (error.status === 401 || error.status === 403)) {
    const input = h("input", {
      type: "password",
      name: "token",
      placeholder: "API token",
      "aria-label": "API token",
      autocomplete: "off",
    });
    input.value = savedToken() ?? "";
    const form = h(
      "form",
      { class: "token-form" },
      "This server needs a read token. ",
      input,
      h("button", { type: "submit" }, "Use token"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      saveToken(input.value.trim());
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    });
    return [error.message, " ", form];
  }
  return error instanceof Error ? error.message : String(error);
}

export function datasetLink(namespace: string, name: string): HTMLElement {
  return h("a", { href: links.dataset(namespace, name), class: "entity", title: `${namespace} / ${name}` }, name);
}

export function jobLink(namespace: string, name: string): HTMLElement {
  return h("a", { href: links.job(namespace, name), class: "entity", title: `${namespace} / ${name}` }, name);
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

export function badge(kind: string): HTMLElement {
  return h("span", { class: `badge badge-${kind.toLowerCase()}` }, kind.toLowerCase());
}

/** Marquez's run states in OpenLineage's words, so every page names a state the same way. */
const OPENLINEAGE_STATE: Record<string, string> = { COMPLETED: "COMPLETE", FAILED: "FAIL", ABORTED: "ABORT" };

/** A run state as OpenLineage's event type names it (`COMPLETE`, `FAIL`, `ABORT`, …). */
export function stateWord(state: string | null | undefined): string {
  const upper = (state ?? "").toUpperCase();
  return OPENLINEAGE_STATE[upper] ?? upper;
}

/** A run state, coloured by what it means. */
export function runState(state: string | null | undefined): HTMLElement {
  const word = stateWord(state);
  return h("span", { class: `state state-${word.toLowerCase()}` }, word);
}

/** A namespace as text, after the icon of its platform when its scheme names one we know. */
export function namespaceLabel(namespace: string, attrs: Record<string, string> = {}): HTMLElement {
  const icon = platformIcon(namespace);
  return h("span", { class: "wrap muted namespace", ...attrs }, icon, namespace);
}
