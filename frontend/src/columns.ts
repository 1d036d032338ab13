// The column view's data: each drawn dataset's fields as rows, and the field edges between
// them from the field graph (`GET /api/v1/column-lineage`), which joins every origin of field
// lineage — lineage facet, columnLineage, SQL, recorded field operations (design §3.3).

import type { ColumnGraph } from "./api";
import type { LineageGraph } from "./graph-model";

export interface FieldRow {
  id: string;
  /** The graph node of the dataset the field belongs to. */
  dataset: string;
  field: string;
  type: string | null;
}

export interface FieldEdge {
  id: string;
  source: string;
  target: string;
}

export interface Columns {
  /** Rows per dataset node, in the order they are drawn (by field name). */
  rows: Map<string, FieldRow[]>;
  edges: FieldEdge[];
}

export function rowId(dataset: string, field: string): string {
  return JSON.stringify(["field", dataset, field]);
}

/** The fields and field edges of `fields` that belong to datasets drawn in `graph`. */
export function columnsOf(graph: LineageGraph, fields: ColumnGraph): Columns {
  const datasetIds = new Map<string, string>();
  for (const node of graph.nodes) {
    if (node.kind === "dataset") datasetIds.set(JSON.stringify([node.namespace, node.name]), node.id);
  }
  const rowOf = new Map<string, FieldRow>();
  const rows = new Map<string, FieldRow[]>();
  for (const node of fields.graph) {
    const dataset = datasetIds.get(JSON.stringify([node.data.namespace, node.data.dataset]));
    if (dataset === undefined) continue;
    const row = { id: rowId(dataset, node.data.field), dataset, field: node.data.field, type: node.data.fieldType ?? null };
    rowOf.set(node.id, row);
    rows.set(dataset, [...(rows.get(dataset) ?? []), row]);
  }
  for (const list of rows.values()) list.sort((a, b) => a.field.localeCompare(b.field));
  const edges = new Map<string, FieldEdge>();
  for (const node of fields.graph) {
    for (const edge of node.outEdges) {
      const source = rowOf.get(edge.origin);
      const target = rowOf.get(edge.destination);
      if (!source || !target) continue;
      const id = JSON.stringify([source.id, target.id]);
      edges.set(id, { id, source: source.id, target: target.id });
    }
  }
  return { rows, edges: [...edges.values()] };
}
