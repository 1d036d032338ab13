// Bundle src/ into ../src/upstream/web/static: minified, content-hashed assets and an
// index.html that names them, so the server can cache assets forever and index.html never.
// The layout worker is bundled first, so the page's bundle can be told its hashed name.
import { build } from "esbuild";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

/** npm packages whose code ends up in the bundles (dagre's build inlines graphlib). */
const SHIPPED = ["cytoscape", "@dagrejs/dagre", "@dagrejs/graphlib"];

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

const worker = written(await build({ ...common, entryPoints: ["src/layout-worker.ts"], format: "iife" }));
const page = written(
  await build({
    ...common,
    entryPoints: ["src/main.ts", "src/style.css"],
    format: "esm",
    define: { LAYOUT_WORKER_URL: JSON.stringify(`assets/${named(worker, "layout-worker", ".js")}`) },
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
  const text = await readFile(`node_modules/${name}/LICENSE`, "utf8");
  notices.push(`${name} ${version} (${license})\n\n${text.trim()}\n`);
}
await writeFile(path.join(out, "THIRD-PARTY-NOTICES.txt"), notices.join(`\n${"-".repeat(72)}\n\n`));
for (const name of [...worker, ...page]) console.log(`built ${name}`);
