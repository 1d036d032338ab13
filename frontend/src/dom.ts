// Building DOM from data without ever parsing it as HTML: every string becomes a text node,
// so names holding quotes, `<script>` or unicode are shown exactly as they are.

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** An element with attributes (`on…` keys are listeners) and children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(key, "");
    } else {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Append children; strings and numbers go in as text nodes. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replace everything inside `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A local time for an ISO timestamp, with the exact UTC value as its tooltip. */
export function time(iso: string | null | undefined): HTMLElement {
  if (!iso) return h("span", { class: "muted" }, "—");
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h("span", {}, iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

/** A message block for errors and empty states. */
export function notice(text: string, kind: "error" | "info" = "info"): HTMLElement {
  return h("p", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : null }, text);
}

/** A table from a header row and body rows. */
export function table(headers: string[], rows: Child[][], attrs: Attrs = {}): HTMLElement {
  return h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, headers.map((text) => h("th", {}, text)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, row.map((cell) => h("td", {}, cell))))),
  );
}

/** "1 node", "3 nodes": a count with its noun in the right number. */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
