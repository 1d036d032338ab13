// What changed in a dataset's schema between two versions: fields added, removed, and
// retyped (same name, another type), each by name.

import type { SchemaField } from "./api";

export interface SchemaChanges {
  added: SchemaField[];
  removed: SchemaField[];
  retyped: { name: string; from: string | null; to: string | null }[];
}

/** The changes from `before` to `after` (null `before`: the first version, all added). */
export function schemaChanges(before: SchemaField[] | null, after: SchemaField[]): SchemaChanges {
  const old = new Map((before ?? []).map((field) => [field.name, field]));
  const now = new Map(after.map((field) => [field.name, field]));
  const byName = (a: SchemaField, b: SchemaField) => a.name.localeCompare(b.name);
  return {
    added: after.filter((field) => !old.has(field.name)).sort(byName),
    removed: (before ?? []).filter((field) => !now.has(field.name)).sort(byName),
    retyped: after
      .filter((field) => old.has(field.name) && (old.get(field.name)?.type ?? null) !== (field.type ?? null))
      .map((field) => ({ name: field.name, from: old.get(field.name)?.type ?? null, to: field.type ?? null }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
