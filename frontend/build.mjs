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
// The licences of the packages whose code the bundles carry, and where their source is
// (EPL-2.0, elkjs's licence, asks that whoever receives its compiled code is told): beside
// the bundle in the package, and as an asset the page links to, since a browser that runs
// the code never sees the package.
const notices = [];
for (const name of SHIPPED) {
  const { version, license, repository } = JSON.parse(await readFile(`node_modules/${name}/package.json`, "utf8"));
  const licence = ["LICENSE", "LICENSE.md"].map((file) => `node_modules/${name}/${file}`);
  const text = await readFile(licence[0], "utf8").catch(() => readFile(licence[1], "utf8"));
  const source = String(repository?.url ?? repository ?? "").replace(/^git\+/, "").replace(/\.git$/, "");
  const where = `Source code: ${source} (version ${version}), also the npm package ${name}@${version}.`;
  notices.push(`${name} ${version} (${license})\n${where}\n\n${text.trim()}\n`);
}
const noticeText = notices.join(`\n${"-".repeat(72)}\n\n`);
const noticeHash = createHash("sha256").update(noticeText).digest("hex").slice(0, 8).toUpperCase();
const noticeAsset = `THIRD-PARTY-NOTICES-${noticeHash}.txt`;
await writeFile(path.join(out, "THIRD-PARTY-NOTICES.txt"), noticeText);
await writeFile(path.join(assets, noticeAsset), noticeText);

const html = (await readFile("src/index.html", "utf8"))
  .replace("%SCRIPT%", `assets/${named(page, "main", ".js")}`)
  .replace("%STYLE%", `assets/${named(page, "style", ".css")}`)
  .replace("%NOTICES%", `assets/${noticeAsset}`);
await writeFile(path.join(out, "index.html"), html);
for (const name of [...worker, ...page, noticeAsset]) console.log(`built ${name}`);
