// Bundle src/ into ../src/upstream/web/static: minified, content-hashed assets and an
// index.html that names them, so the server can cache assets forever and index.html never.
// ELK's layout worker ships as ELK builds it, copied under its content hash, and the page's
// bundle is told that name.
import { createHash } from "node:crypto";
import { build } from "esbuild";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

/** npm packages whose code ends up in the bundles. */
const SHIPPED = ["cytoscape", "elkjs"];

const out = path.resolve("../src/upstream/web/static");
const assets = path.join(out, "assets");
await rm(out, { recursive: true, force: true });
await mkdir(assets, { recursive: true });

const common = {
  bundle: true,
  minify: true,
  target: ["es2022"],
  outdir: assets,
  entryNames: "[name]-[hash]",
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
};

/** The file names a build wrote, e.g. ["main-ABC123.js", "main-ABC123.js.LEGAL.txt"]. */
const written = (result) => Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const named = (names, prefix, ext) => {
  const found = names.find((name) => name.startsWith(`${prefix}-`) && name.endsWith(ext));
  if (!found) throw new Error(`no ${prefix}*${ext} output`);
  return found;
};

const elkWorker = await readFile("node_modules/elkjs/lib/elk-worker.min.js");
const elkHash = createHash("sha256").update(elkWorker).digest("hex").slice(0, 8).toUpperCase();
const worker = [`elk-worker-${elkHash}.js`];
await writeFile(path.join(assets, worker[0]), elkWorker);
const page = written(
  await build({
    ...common,
    entryPoints: ["src/main.ts", "src/style.css"],
    format: "esm",
    define: { ELK_WORKER_URL: JSON.stringify(`assets/${worker[0]}`) },
  }),
);
const html = (await readFile("src/index.html", "utf8"))
  .replace("%SCRIPT%", `assets/${named(page, "main", ".js")}`)
  .replace("%STYLE%", `assets/${named(page, "style", ".css")}`);
await writeFile(path.join(out, "index.html"), html);

// The licences of the packages whose code the bundles carry, shipped beside them.
const notices = [];
for (const name of SHIPPED) {
  const { version, license } = JSON.parse(await readFile(`node_modules/${name}/package.json`, "utf8"));
  const licence = ["LICENSE", "LICENSE.md"].map((file) => `node_modules/${name}/${file}`);
  const text = await readFile(licence[0], "utf8").catch(() => readFile(licence[1], "utf8"));
  notices.push(`${name} ${version} (${license})\n\n${text.trim()}\n`);
}
await writeFile(path.join(out, "THIRD-PARTY-NOTICES.txt"), notices.join(`\n${"-".repeat(72)}\n\n`));
for (const name of [...worker, ...page]) console.log(`built ${name}`);
