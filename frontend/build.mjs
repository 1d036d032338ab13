// Bundle src/ into ../src/upstream/web/static: minified, content-hashed assets and an
// index.html that names them, so the server can cache assets forever and index.html never.
import { build } from "esbuild";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

const out = path.resolve("../src/upstream/web/static");
await rm(out, { recursive: true, force: true });
await mkdir(path.join(out, "assets"), { recursive: true });

const result = await build({
  entryPoints: ["src/main.ts", "src/style.css"],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022"],
  outdir: path.join(out, "assets"),
  entryNames: "[name]-[hash]",
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const pick = (ext) => {
  const found = outputs.find((name) => name.startsWith("main-") && name.endsWith(ext))
    ?? outputs.find((name) => name.startsWith("style-") && name.endsWith(ext));
  if (!found) throw new Error(`no ${ext} output`);
  return found;
};
const html = (await readFile("src/index.html", "utf8"))
  .replace("%SCRIPT%", `assets/${pick(".js")}`)
  .replace("%STYLE%", `assets/${pick(".css")}`);
await writeFile(path.join(out, "index.html"), html);
for (const name of outputs) console.log(`built ${name}`);
