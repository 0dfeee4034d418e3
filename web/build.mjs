// Builds the page into ../forge/web/static: content-hashed assets and an index.html naming them.
// Reproducible: the same lockfile and sources give the same bytes (CI rebuilds and diffs them).
import * as esbuild from "esbuild";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, "..", "forge", "web", "static");
const assets = path.join(out, "assets");

await rm(out, { recursive: true, force: true });
await mkdir(assets, { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: path.join(here, "src", "main.tsx") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome109", "firefox115", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  outdir: assets,
  metafile: true,
  legalComments: "linked",
  sourcemap: false,
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const script = outputs.find((name) => name.endsWith(".js"));
const style = outputs.find((name) => name.endsWith(".css"));
if (!script || !style) throw new Error(`expected one .js and one .css, got ${outputs.join(", ")}`);

const template = await readFile(path.join(here, "src", "index.html"), "utf8");
const html = template
  .replace("%SCRIPT%", `/assets/${script}`)
  .replace("%STYLE%", `/assets/${style}`);
await writeFile(path.join(out, "index.html"), html);
console.log(`built ${script}, ${style}`);
