// What a change to a dataset or a field reaches downstream: each dataset and field with its
// hop count (jobs passed for a dataset, field edges for a field) and the jobs writing it on the
// way, from the downstream walk (`…/lineage?direction=downstream`) and the field graph
// (`/api/v1/column-lineage`). Also the CSV the impact list exports.

import type { ColumnGraph } from "./api";
import type { LineageGraph } from "./graph-model";

export interface Impacted {
  kind: "dataset" | "field";
  namespace: string;
  name: string;
  /** The field, for a field row. */
  field: string | null;
  hops: number;
  /** The jobs on the walk that write the dataset (a field's: its dataset's), by name. */
  jobs: { namespace: string; name: string }[];
}

/** The datasets downstream of the graph's centre, nearest first, with their writing jobs. */
export function impactedDatasets(graph: LineageGraph): Impacted[] {
  const centre = graph.nodes.find((node) => node.centre);
  if (!centre) return [];
  const byId = new Map(graph.nodes.map((node) => [node.id, node]));
  const next = new Map<string, string[]>();
  for (const edge of graph.edges) next.set(edge.source, [...(next.get(edge.source) ?? []), edge.target]);
  // Breadth first from the centre: a dataset's hops are the jobs passed to reach it.
  const depth = new Map<string, number>([[centre.id, 0]]);
  const queue = [centre.id];
  while (queue.length) {
    const id = queue.shift() as string;
    for (const target of next.get(id) ?? []) {
      if (depth.has(target)) continue;
      depth.set(target, (depth.get(id) ?? 0) + 1);
      queue.push(target);
    }
  }
  const writers = new Map<string, { namespace: string; name: string }[]>();
  for (const edge of graph.edges) {
    const job = byId.get(edge.source);
    if (!job || job.kind === "dataset" || !depth.has(edge.source)) continue;
    writers.set(edge.target, [...(writers.get(edge.target) ?? []), { namespace: job.namespace, name: job.name }]);
  }
  return graph.nodes
    .filter((node) => node.kind === "dataset" && !node.centre && depth.has(node.id))
    .map((node) => ({
      kind: "dataset" as const,
      namespace: node.namespace,
      name: node.name,
      field: null,
      hops: (depth.get(node.id) ?? 0) / 2,
      jobs: (writers.get(node.id) ?? []).sort((a, b) => a.name.localeCompare(b.name)),
    }))
    .sort(byHopsThenName);
}

/**
 * The fields downstream of `from` (the field graph's node ids of the dataset's fields, or of
 * one field) along field edges, nearest first; each with the jobs its dataset's row names.
 */
export function impactedFields(fields: ColumnGraph, from: Set<string>, datasets: Impacted[]): Impacted[] {
  const byId = new Map(fields.graph.map((node) => [node.id, node]));
  const depth = new Map<string, number>([...from].map((id) => [id, 0]));
  const queue = [...from];
  while (queue.length) {
    const id = queue.shift() as string;
    for (const edge of byId.get(id)?.outEdges ?? []) {
      if (depth.has(edge.destination)) continue;
      depth.set(edge.destination, (depth.get(id) ?? 0) + 1);
      queue.push(edge.destination);
    }
  }
  const jobsOf = new Map(datasets.map((row) => [JSON.stringify([row.namespace, row.name]), row.jobs]));
  const rows: Impacted[] = [];
  for (const [id, hops] of depth) {
    const node = byId.get(id);
    if (!node || from.has(id)) continue;
    const { namespace, dataset, field } = node.data;
    rows.push({ kind: "field", namespace, name: dataset, field, hops, jobs: jobsOf.get(JSON.stringify([namespace, dataset])) ?? [] });
  }
  return rows.sort(byHopsThenName);
}

/** Nearest first, then by namespace, dataset and field (a dataset before its fields). */
export function byHopsThenName(a: Impacted, b: Impacted): number {
  return a.hops - b.hops || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name) || (a.field ?? "").localeCompare(b.field ?? "");
}

/** One CSV cell: quoted when it must be, and never read as a formula by a spreadsheet. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** Rows as CSV text (RFC 4180: comma separated, CRLF line ends). */
export function toCsv(header: string[], rows: string[][]): string {
  return [header, ...rows].map((row) => row.map(csvCell).join(",")).join("\r\n") + "\r\n";
}
