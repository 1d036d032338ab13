// The "Watch" control of the dataset, field and tag pages (design §4.8): a small form that
// subscribes a webhook to changes of what the page shows, and says what the server answered —
// the subscription with its secret (shown this once), or the server's words naming the field
// it refused.

import { type Subscription, type Watch, api } from "./api";
import { h, replace } from "./dom";
import { errorText } from "./views/common";

/** The kinds of change each kind of watch can tell, as the server's `KINDS_OF`. */
const KINDS: Record<"dataset" | "field" | "tag", string[]> = {
  dataset: ["relation_added", "relation_removed", "field_edges_changed", "schema_break", "deleted", "revived", "run_failed"],
  field: ["field_edges_changed", "schema_break"],
  tag: ["field_edges_changed", "schema_break"],
};

const DIGESTS: [string, string][] = [
  ["", "each change"],
  ["PT1H", "hourly digest"],
  ["P1D", "daily digest"],
];

function choice(name: string, options: [string, string][], label: string): HTMLSelectElement {
  return h("select", { name, "aria-label": label }, options.map(([value, text]) => h("option", { value }, text)));
}

/** A "Watch" button that opens the subscription form for `watch`. */
export function watchControl(watch: Watch): HTMLElement {
  const kind = "dataset" in watch ? "dataset" : "field" in watch ? "field" : "tag";
  const url = h("input", { type: "url", name: "watch-webhook", required: true, placeholder: "https://hooks.example.com/lineage", "aria-label": "Watch: webhook URL" });
  const secret = h("input", { type: "password", name: "watch-secret", autocomplete: "off", placeholder: "made by the server when empty", "aria-label": "Watch: signing secret" });
  const direction = choice("watch-direction", [["downstream", "downstream"], ["upstream", "upstream"], ["both", "both"]], "Watch: direction");
  // No `max`: the server's `max_levels` decides, and its refusal says so.
  const levels = h("input", { type: "number", name: "watch-levels", min: 1, value: 1, "aria-label": "Watch: levels" });
  const digest = choice("watch-digest", DIGESTS, "Watch: grouping");
  const boxes = KINDS[kind].map((change) => h("input", { type: "checkbox", name: "watch-changes", value: change, checked: true }));
  const answer = h("div", { class: "watch-answer", role: "status" });
  const form = h(
    "form",
    { class: "watch-form" },
    h("label", { class: "control" }, "Webhook ", url),
    h("label", { class: "control" }, "Secret ", secret),
    h("label", { class: "control" }, "Direction ", direction),
    h("label", { class: "control" }, "Levels ", levels),
    h("label", { class: "control" }, "Send ", digest),
    h("fieldset", {}, h("legend", {}, "Changes"), boxes.map((box) => h("label", { class: "control" }, box, " ", box.value))),
    h("button", { type: "submit" }, "Subscribe"),
    answer,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const body: Record<string, unknown> = {
      watch,
      direction: direction.value,
      levels: Number.parseInt(levels.value, 10),
      changes: boxes.filter((box) => box.checked).map((box) => box.value),
      deliver: { webhook: { url: url.value.trim(), ...(secret.value ? { secret: secret.value } : {}) } },
    };
    if (digest.value) body.digest = digest.value;
    replace(answer, "Subscribing…");
    api
      .subscribe(body)
      .then((made: Subscription) => replace(answer, subscribed(made)))
      .catch((error: unknown) => replace(answer, h("p", { class: "notice notice-error" }, errorText(error))));
  });
  return h("details", { class: "watch" }, h("summary", { class: "button" }, "Watch"), form);
}

function subscribed(made: Subscription): HTMLElement {
  const secret = made.deliver.webhook?.secret;
  return h(
    "p",
    { class: "notice" },
    "Watching: subscription ",
    h("code", { class: "subscription-id" }, made.id),
    ". ",
    secret ? ["Its signing secret, shown only now: ", h("code", { class: "subscription-secret" }, secret)] : null,
  );
}
