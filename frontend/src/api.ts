// The server's HTTP API, as the UI uses it. Every path segment is percent-encoded on its own,
// since names may hold '/', ':', spaces and unicode (design §2).

const TOKEN_KEY = "upstream.token";

/** A failed request, with the server's `{code, message}` when it sent one. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function savedToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

/** `/a/b/c` from raw segments, each percent-encoded once. */
export function path(...segments: string[]): string {
  return "/" + segments.map(encodeURIComponent).join("/");
}

export type Query = Record<string, string | number | string[] | null | undefined>;

function withQuery(url: string, query: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === null || value === undefined || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) params.append(key, String(item));
  }
  const text = params.toString();
  return text ? `${url}?${text}` : url;
}

/** GET a JSON document; throws ApiFailure with the server's message on any non-2xx. */
export async function getJson<T>(url: string, query: Query = {}): Promise<T> {
  return requestJson<T>(withQuery(url, query), {});
}

/** POST a JSON document and read the JSON answer; throws ApiFailure as `getJson` does. */
export async function postJson<T>(url: string, body: unknown): Promise<T> {
  return requestJson<T>(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
  });
}

async function requestJson<T>(url: string, init: RequestInit): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...(init.headers as Record<string, string>) };
  const token = savedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(url, { ...init, headers });
  } catch (error) {
    throw new ApiFailure(0, `the server did not answer: ${String(error)}`);
  }
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = (await response.json()) as { message?: unknown; detail?: unknown };
      if (typeof body.message === "string") message = body.message;
      else if (typeof body.detail === "string") message = body.detail;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiFailure(response.status, message);
  }
  return (await response.json()) as T;
}

// ---- shapes (design §4.2–4.4) ----

export interface EntityId {
  type: string;
  namespace: string;
  name: string;
}

export interface SearchResult {
  type: "DATASET" | "JOB";
  name: string;
  namespace: string;
  nodeId: string;
  updatedAt?: string | null;
}

export interface SearchResponse {
  totalCount: number;
  results: SearchResult[];
}

export interface SchemaField {
  name: string;
  type?: string | null;
  description?: string | null;
  /** Marquez's field tags (`PII`). */
  tags?: string[];
}

export interface Dataset {
  name: string;
  namespace: string;
  type?: string;
  description?: string | null;
  createdAt?: string | null;
  updatedAt?: string | null;
  lastModifiedAt?: string | null;
  sourceName?: string | null;
  /** Marquez's dataset tags; a dataset's tag tags each of its fields. */
  tags?: string[];
  fields?: SchemaField[];
  facets?: Record<string, unknown>;
}

export interface DatasetRef {
  namespace: string;
  name: string;
}

/** A dataset version a run read or wrote, with the input or output facets it was sent with. */
export interface VersionRef {
  datasetVersionId: { namespace: string; name: string; version: string | null };
  facets?: Record<string, unknown>;
}

export interface Run {
  id: string;
  state?: string | null;
  createdAt?: string | null;
  startedAt?: string | null;
  endedAt?: string | null;
  durationMs?: number | null;
  jobVersion?: { namespace: string; name: string } | null;
  inputDatasetVersions?: VersionRef[];
}

/** One version of a dataset (Marquez's shape): its schema then, and the run that wrote it. */
export interface DatasetVersion {
  version: string;
  createdAt: string;
  fields?: SchemaField[];
  createdByRun?: Run | null;
}

export interface DatasetVersions {
  versions: DatasetVersion[];
  totalCount: number;
}

export interface Job {
  name: string;
  namespace: string;
  type?: string;
  description?: string | null;
  createdAt?: string | null;
  updatedAt?: string | null;
  inputs?: DatasetRef[];
  outputs?: DatasetRef[];
  parentJobName?: string | null;
  latestRun?: Run | null;
  facets?: Record<string, unknown>;
}

export interface RunsResponse {
  runs: Run[];
  totalCount?: number;
}

export interface Relation {
  data: string;
  program: string;
  accesses: string[];
  runs: string[];
  components: string[];
}

export interface DataEntry {
  entityId: EntityId;
  temporary?: boolean;
}

/** Control flow between two programs (the `jobDependencies` run facet), apart from data flow. */
export interface JobDependency {
  upstream: string;
  downstream: string;
  dependencyType: string | null;
  sequenceTriggerRule: string | null;
  statusTriggerRule: string | null;
  triggerRule: string | null;
  runs: { upstream: string | null; downstream: string | null }[];
}

export interface LineageResponse {
  start: number | string;
  end: number | string;
  relations: Relation[];
  data: Record<string, DataEntry>;
  programs: Record<string, { entityId: EntityId }>;
  /** Job lineage only: the job dependencies around the job. */
  jobDependencies?: JobDependency[];
  truncated?: boolean;
  /** With no relation: when the latest run touching the dataset started, all its runs lying outside the window. */
  latestRunOutsideWindow?: string;
  /** Only for a token limited to some namespaces: the datasets and jobs the walk stopped at, never named. */
  hiddenNodes?: number;
  hiddenRelations?: number;
}

export interface ColumnNode {
  id: string;
  type: string;
  data: { namespace: string; dataset: string; field: string; fieldType?: string | null };
  inEdges: { origin: string; destination: string }[];
  outEdges: { origin: string; destination: string }[];
}

export interface ColumnGraph {
  graph: ColumnNode[];
  truncated?: boolean;
}

export interface RunSummary {
  id: string;
  state?: string | null;
  startedAt?: string | null;
  endedAt?: string | null;
  durationMs?: number | null;
}

export interface WorkflowContents {
  namespace: string;
  name: string;
  isWorkflow: boolean;
  runs: (RunSummary & { jobRuns: (RunSummary & { job: DatasetRef })[] })[];
  jobs: { namespace: string; name: string; runs: number; latestRun: RunSummary }[];
}

export type OperationInput =
  | { type: "source"; namespace: string; name: string }
  | { type: "field"; name: string; origin?: string | number | null };

export interface Operation {
  name: string;
  description?: string | null;
  inputs: OperationInput[];
  outputs: string[];
}

export interface FieldPath {
  operations: Operation[];
  runs: (string | { runId?: string; id?: string })[];
}

export interface FieldPaths {
  fieldName: string;
  startTimeInSeconds: number;
  endTimeInSeconds: number;
  paths: FieldPath[];
}

export interface FieldSummarySide {
  dataset: DatasetRef;
  fields: string[];
  /** Per field, what stated the edges that reached it: lineageFacet, fieldOperations,
   * columnLineage or sql (the job's SQL, parsed by the server). */
  origins?: Record<string, string[]>;
}

export interface FieldSummary {
  incoming?: FieldSummarySide[];
  outgoing?: FieldSummarySide[];
}

export interface FieldWithLineage {
  name: string;
  lineage: boolean;
}

/** A relation of a lineage diff: runs collapsed, so `runs` is a count (both sides' for a kept
 * one). */
export interface DiffRelation {
  data: string;
  program: string;
  accesses: string[];
  components: string[];
}

export interface FieldEnd {
  namespace: string;
  name: string;
  field: string;
}

export interface DiffSide {
  relations: (DiffRelation & { runs: number })[];
  fieldEdges: { source: FieldEnd; target: FieldEnd }[];
  data: string[];
  programs: string[];
}

/** `GET /v3/namespaces/{ns}/datasets/{ds}/lineage/diff` (design §4.5). */
export interface LineageDiff {
  from: { start: number; end: number; asOf?: string };
  to: { start: number; end: number; asOf?: string };
  added: DiffSide;
  removed: DiffSide;
  kept: (DiffRelation & { runs: { from: number; to: number } })[];
  data: Record<string, DataEntry>;
  programs: Record<string, { entityId: EntityId }>;
  truncated?: boolean;
}

export interface RunNode {
  runId: string;
  job: DatasetRef;
  state?: string | null;
  startedAt?: string | null;
  endedAt?: string | null;
  level: number;
}

export interface RunDatasetVersion {
  id: string;
  dataset: DatasetRef;
  version: string | null;
  producerVersion?: string | null;
  writtenBy: string | null;
}

/** `GET /v3/runs/{runId}/lineage`: runs and the dataset versions between them. */
export interface RunLineage {
  runId: string;
  direction: "both" | "upstream" | "downstream";
  levels: number;
  asOf?: string;
  runs: RunNode[];
  datasetVersions: RunDatasetVersion[];
  edges: { type: "read" | "write"; run: string; datasetVersion: string }[];
  truncated?: boolean;
}

export interface FieldsOfDataset {
  dataset: DatasetRef;
  fields: string[];
  origins?: Record<string, string[]>;
}

/** `GET /v3/tags/{tag}/reach`: the tagged fields and every field downstream of them. */
export interface TagReach {
  tag: string;
  levels: number;
  tagged: FieldsOfDataset[];
  reach: FieldsOfDataset[];
}

/** A page of one of the estate's lists (`GET /v3/namespaces`, …). */
export interface NamespaceCounts {
  namespaces: { name: string; datasets: number; jobs: number; updatedAt?: string | null }[];
  totalCount: number;
}

export interface WrittenDatasets {
  datasets: { namespace: string; name: string; writtenAt?: string | null }[];
  totalCount: number;
}

export interface LatestRuns {
  runs: (RunSummary & { job: DatasetRef })[];
  totalCount: number;
  failedCount: number;
}

export interface MapGroup {
  key: string;
  containers: string[];
  datasets: number;
  flowsWithin: number;
  deeper: boolean;
}

export interface MapEdge {
  source: string;
  target: string;
  flows: number;
}

export interface HierarchyMap {
  level: number;
  within: string[];
  depth: number;
  groups: MapGroup[];
  edges: MapEdge[];
}

// ---- calls ----

/** What a subscription watches (design §4.8). */
export type Watch =
  | { dataset: { namespace: string; name: string } }
  | { field: { namespace: string; name: string; field: string } }
  | { tag: string };

export interface Subscription {
  id: string;
  watch: Watch;
  direction: string;
  levels: number;
  changes: string[];
  digest: number | null;
  deliver: { webhook?: { url: string; secret?: string }; kafka?: { topic: string } };
}

export const api = {
  subscribe: (body: Record<string, unknown>) => postJson<Subscription>("/v3/subscriptions", body),
  namespaceCounts: (limit: number, offset: number) => getJson<NamespaceCounts>("/v3/namespaces", { limit, offset }),
  recentlyWritten: (limit: number, offset: number) =>
    getJson<WrittenDatasets>("/v3/datasets/recently-written", { limit, offset }),
  latestRuns: (limit: number, offset: number) => getJson<LatestRuns>("/v3/jobs/latest-runs", { limit, offset }),
  search: (q: string, limit = 50) => getJson<SearchResponse>("/api/v1/search", { q, limit }),
  dataset: (ns: string, name: string) =>
    getJson<Dataset>(path("api", "v1", "namespaces", ns, "datasets", name)),
  datasetVersions: (ns: string, name: string, limit: number, offset: number) =>
    getJson<DatasetVersions>(path("api", "v1", "namespaces", ns, "datasets", name, "versions"), { limit, offset }),
  job: (ns: string, name: string) => getJson<Job>(path("api", "v1", "namespaces", ns, "jobs", name)),
  jobRuns: (ns: string, name: string, limit = 20) =>
    getJson<RunsResponse>(path("api", "v1", "namespaces", ns, "jobs", name, "runs"), { limit }),
  datasetLineage: (ns: string, name: string, query: Query) =>
    getJson<LineageResponse>(path("v3", "namespaces", ns, "datasets", name, "lineage"), query),
  jobLineage: (ns: string, name: string, query: Query) =>
    getJson<LineageResponse>(path("v3", "namespaces", ns, "jobs", name, "lineage"), query),
  workflowContents: (ns: string, name: string, query: Query) =>
    getJson<WorkflowContents>(path("v3", "namespaces", ns, "jobs", name, "contents"), query),
  lineageDiff: (ns: string, name: string, query: Query) =>
    getJson<LineageDiff>(path("v3", "namespaces", ns, "datasets", name, "lineage", "diff"), query),
  runLineage: (id: string, query: Query) => getJson<RunLineage>(path("v3", "runs", id, "lineage"), query),
  hierarchyMap: (level: number, within: string | null, asOf: string | null) =>
    getJson<HierarchyMap>("/v3/lineage/graph", { rollup: "hierarchy", level, within, asOf }),
  tagReach: (tag: string, levels: number) => getJson<TagReach>(path("v3", "tags", tag, "reach"), { levels }),
  run: (id: string) => getJson<Run>(path("api", "v1", "jobs", "runs", id)),
  columnLineage: (nodeId: string, depth: number) =>
    getJson<ColumnGraph>("/api/v1/column-lineage", { nodeId, depth, withDownstream: "true" }),
  fieldsWithLineage: (ns: string, name: string, query: Query) =>
    getJson<(FieldWithLineage | string)[]>(
      path("v3", "namespaces", ns, "datasets", name, "lineage", "fields"),
      { ...query, includeCurrent: "true" },
    ),
  fieldPaths: (ns: string, name: string, field: string, query: Query) =>
    getJson<FieldPaths>(
      path("v3", "namespaces", ns, "datasets", name, "fields", field, "lineage"),
      query,
    ),
  fieldSummary: (ns: string, name: string, field: string, query: Query) =>
    getJson<FieldSummary>(
      path("v3", "namespaces", ns, "datasets", name, "lineage", "fields", field),
      { ...query, direction: "both" },
    ),
};
