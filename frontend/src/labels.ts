// Node labels that tell nodes apart: the distinguishing end of a name is kept (a middle
// ellipsis), the namespace can be shown on a second line, and when two nodes of a graph would
// still look alike they get more of their name, then their namespace, then their kind.

/** Letters of a label line that fit a node box at the label's font size. */
export const LINE_LETTERS = 24;

/** The marker of a rolled-up workflow: a square in a square, which DejaVu Sans (Debian's
 * default fonts) draws; `⧉` has no glyph there. */
export const WORKFLOW_MARK = "▣";

export interface Labelled {
  id: string;
  kind: "dataset" | "job" | "workflow";
  namespace: string;
  name: string;
  temporary: boolean;
}

/** `text` cut to `letters` by dropping its middle: names differ at their ends
 * (`dag_int08_001.int08_load_orders`), rarely in the middle. */
export function middleEllipsis(text: string, letters: number): string {
  const chars = [...text];
  if (chars.length <= letters) return text;
  const tail = Math.ceil((letters - 1) * 0.6);
  const head = letters - 1 - tail;
  return `${chars.slice(0, head).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

/** Letters of a field row (name and type) that fit its box on one line. */
export const ROW_LETTERS = 22;

/**
 * A field row's caption on one line, so a long type never spills onto the next row: the
 * field's name first, then as much of its type as fits (the side panel has both in full).
 */
export function rowCaption(field: string, type: string | null): string {
  if (!type) return middleEllipsis(field, ROW_LETTERS);
  const whole = `${field} : ${type}`;
  if ([...whole].length <= ROW_LETTERS) return whole;
  const room = ROW_LETTERS - [...field].length - 3;
  if (room < 5) return middleEllipsis(field, ROW_LETTERS);
  return `${field} : ${[...type].slice(0, room - 1).join("")}…`;
}

/** The name as the graph shows it in full (the side panel and tooltips use it). */
export function fullLabel(node: Labelled): string {
  const mark = node.kind === "workflow" ? `${WORKFLOW_MARK} ` : "";
  return `${mark}${node.name}${node.temporary ? " (temporary)" : ""}`;
}

function lineOf(node: Labelled, letters: number): string {
  const mark = node.kind === "workflow" ? `${WORKFLOW_MARK} ` : "";
  const suffix = node.temporary ? " (temporary)" : "";
  const room = Math.max(8, letters - [...mark].length - [...suffix].length);
  return `${mark}${middleEllipsis(node.name, room)}${suffix}`;
}

/**
 * The caption of every node, different for any two nodes: first the name cut to one line
 * (with the namespace below when `namespaces` is on); a caption shared by several nodes is
 * widened to the whole name, then given the namespace, then the kind. Nodes are distinct by
 * (kind, namespace, name), so the last step always separates them.
 */
export function captions(nodes: Labelled[], namespaces: boolean): Map<string, string> {
  const steps: ((node: Labelled) => string)[] = [
    (node) => lineOf(node, LINE_LETTERS),
    (node) => wrapped(fullLabel(node)),
    (node) => `${wrapped(fullLabel(node))}\n${wrapped(node.namespace)}`,
    (node) => `${wrapped(fullLabel(node))}\n${wrapped(node.namespace)}\n(${node.kind})`,
  ];
  const withNamespace = (node: Labelled, text: string) =>
    namespaces && !text.includes("\n") ? `${text}\n${middleEllipsis(node.namespace, LINE_LETTERS)}` : text;
  const result = new Map<string, string>();
  let pending = nodes;
  for (const [index, step] of steps.entries()) {
    const byCaption = new Map<string, Labelled[]>();
    for (const node of pending) {
      const text = withNamespace(node, step(node));
      byCaption.set(text, [...(byCaption.get(text) ?? []), node]);
    }
    const last = index === steps.length - 1;
    pending = [];
    for (const [text, group] of byCaption) {
      if (group.length === 1 || last) group.forEach((node) => result.set(node.id, text));
      else pending.push(...group);
    }
    if (!pending.length) break;
  }
  return result;
}

/** Characters after which a name breaks well onto the next line. */
const BREAKS = new Set([".", "_", "/", "-", ":", " "]);

/** A long text broken into lines of at most LINE_LETTERS letters, after a separator when
 * one is near the end of the line. */
function wrapped(text: string): string {
  const chars = [...text];
  const lines: string[] = [];
  let at = 0;
  while (chars.length - at > LINE_LETTERS) {
    let cut = at + LINE_LETTERS;
    for (let back = cut; back > at + LINE_LETTERS / 2; back--) {
      if (BREAKS.has(chars[back - 1])) {
        cut = back;
        break;
      }
    }
    lines.push(chars.slice(at, cut).join(""));
    at = cut;
  }
  lines.push(chars.slice(at).join(""));
  return lines.join("\n");
}

/** How many lines a caption has, for sizing its node. */
export function lineCount(caption: string): number {
  return caption.split("\n").length;
}
