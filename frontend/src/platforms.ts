// The platform a namespace names, from its scheme (`postgres://host:5432` → PostgreSQL, as
// OpenLineage's naming spec writes namespaces), and a small icon for it. The icons are this
// project's own: simple shapes in each platform's colour, built as SVG elements (never parsed
// from text).

export interface Platform {
  id: string;
  /** The platform's name, the icon's tooltip. */
  name: string;
}

type Shape = "database" | "bucket" | "stream" | "files" | "file" | "pinwheel" | "spark" | "warehouse" | "cube";

interface Drawn extends Platform {
  shape: Shape;
  colour: string;
}

/** Scheme (before `://`, lower case) → platform. */
const BY_SCHEME = new Map<string, Drawn>();
const add = (schemes: string[], platform: Drawn) => schemes.forEach((scheme) => BY_SCHEME.set(scheme, platform));
add(["postgres", "postgresql"], { id: "postgresql", name: "PostgreSQL", shape: "database", colour: "#336791" });
add(["mysql", "mariadb"], { id: "mysql", name: "MySQL", shape: "database", colour: "#00758f" });
add(["sqlserver", "mssql"], { id: "sqlserver", name: "SQL Server", shape: "database", colour: "#a91d22" });
add(["oracle"], { id: "oracle", name: "Oracle", shape: "database", colour: "#c74634" });
add(["sqlite"], { id: "sqlite", name: "SQLite", shape: "database", colour: "#0f80cc" });
add(["bigquery"], { id: "bigquery", name: "BigQuery", shape: "warehouse", colour: "#4285f4" });
add(["snowflake"], { id: "snowflake", name: "Snowflake", shape: "warehouse", colour: "#29b5e8" });
add(["redshift"], { id: "redshift", name: "Redshift", shape: "warehouse", colour: "#8c4fff" });
add(["trino", "presto"], { id: "trino", name: "Trino", shape: "warehouse", colour: "#dd00a1" });
add(["databricks"], { id: "databricks", name: "Databricks", shape: "warehouse", colour: "#ff3621" });
add(["s3", "s3a", "s3n"], { id: "s3", name: "Amazon S3", shape: "bucket", colour: "#e25444" });
add(["gs", "gcs"], { id: "gcs", name: "Google Cloud Storage", shape: "bucket", colour: "#4285f4" });
add(["abfss", "abfs", "wasbs", "wasb", "azureblob"], { id: "azure-storage", name: "Azure Storage", shape: "bucket", colour: "#0078d4" });
add(["kafka"], { id: "kafka", name: "Kafka", shape: "stream", colour: "#231f20" });
add(["kinesis"], { id: "kinesis", name: "Kinesis", shape: "stream", colour: "#8c4fff" });
add(["pubsub"], { id: "pubsub", name: "Pub/Sub", shape: "stream", colour: "#4285f4" });
add(["hdfs"], { id: "hdfs", name: "HDFS", shape: "files", colour: "#66ccff" });
add(["hive"], { id: "hive", name: "Hive", shape: "warehouse", colour: "#fdee21" });
add(["file"], { id: "file", name: "Files", shape: "file", colour: "#64748b" });
add(["airflow"], { id: "airflow", name: "Airflow", shape: "pinwheel", colour: "#017cee" });
add(["dbt"], { id: "dbt", name: "dbt", shape: "cube", colour: "#ff694b" });
add(["spark"], { id: "spark", name: "Spark", shape: "spark", colour: "#e25a1c" });

/** Job namespaces carry no scheme; a name that is the tool's own marks it (`airflow`, `dbt-prod`). */
const BY_WORD = ["airflow", "dbt", "spark"];

function drawnOf(namespace: string): Drawn | null {
  const lower = namespace.toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//.exec(lower)?.[1];
  if (scheme) return BY_SCHEME.get(scheme) ?? null;
  // OpenLineage names some namespaces by the platform alone (`bigquery`, `file`); a bare path
  // is a file too.
  const named = BY_SCHEME.get(lower) ?? (lower.startsWith("/") ? BY_SCHEME.get("file") : undefined);
  if (named) return named;
  const word = BY_WORD.find((tool) => new RegExp(`(^|[^a-z])${tool}([^a-z]|$)`).test(lower));
  return (word && BY_SCHEME.get(word)) || null;
}

/** The platform of `namespace`, or null when its scheme is none we know. */
export function platformOf(namespace: string): Platform | null {
  const drawn = drawnOf(namespace);
  return drawn ? { id: drawn.id, name: drawn.name } : null;
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  return element;
}

/** The shapes of each icon on a 16 × 16 grid, in the platform's colour. */
function shapes(shape: Shape, colour: string): SVGElement[] {
  const line = { fill: "none", stroke: colour, "stroke-width": 1.5 };
  switch (shape) {
    case "database":
      return [
        svg("path", { d: "M3 4v8c0 1.4 2.2 2.5 5 2.5s5-1.1 5-2.5V4", ...line }),
        svg("ellipse", { cx: 8, cy: 4, rx: 5, ry: 2.2, ...line }),
        svg("path", { d: "M3 8c0 1.4 2.2 2.5 5 2.5s5-1.1 5-2.5", ...line }),
      ];
    case "warehouse":
      return [svg("path", { d: "M2 7l6-4 6 4v7H2z", ...line }), svg("path", { d: "M5 14V9h6v5", ...line })];
    case "bucket":
      return [svg("path", { d: "M2.5 4h11l-1.5 10h-8z", ...line }), svg("ellipse", { cx: 8, cy: 4, rx: 5.5, ry: 1.6, ...line })];
    case "stream":
      return [2, 6, 10, 14].map((y, index) => svg("path", { d: `M${index % 2 ? 4 : 2} ${y - 1}h${index % 2 ? 10 : 12}`, ...line }));
    case "files":
      return [svg("rect", { x: 4, y: 2, width: 9, height: 11, rx: 1, ...line }), svg("path", { d: "M2 5v9h9", ...line })];
    case "file":
      return [svg("path", { d: "M4 1.5h5l3.5 3.5v9.5H4z", ...line }), svg("path", { d: "M9 1.5V5h3.5", ...line })];
    case "pinwheel":
      return [0, 90, 180, 270].map((angle) =>
        svg("path", { d: "M8 8L8 1.5a3.5 3.5 0 0 1 3.5 3.5z", fill: colour, transform: `rotate(${angle} 8 8)` }),
      );
    case "spark":
      return [svg("path", { d: "M8 1l1.8 4.6L14.5 6l-3.7 3 1.2 5L8 11.3 4 14l1.2-5L1.5 6l4.7-.4z", fill: colour })];
    case "cube":
      return [svg("path", { d: "M8 1.5l6 3.2v6.6l-6 3.2-6-3.2V4.7z", ...line }), svg("path", { d: "M2 4.7l6 3.2 6-3.2M8 7.9v6.6", ...line })];
  }
}

/** A 16-pixel icon of the namespace's platform, titled with its name; null when unknown. */
export function platformIcon(namespace: string): SVGElement | null {
  const drawn = drawnOf(namespace);
  if (!drawn) return null;
  const icon = svg("svg", {
    class: `platform platform-${drawn.id}`,
    viewBox: "0 0 16 16",
    width: 16,
    height: 16,
    role: "img",
    "aria-label": drawn.name,
    "data-platform": drawn.id,
  });
  const title = svg("title", {});
  title.textContent = drawn.name;
  icon.append(title, ...shapes(drawn.shape, drawn.colour));
  return icon;
}
