// Builds the page into ../forge/web/static: content-hashed assets and an index.html naming them,
// and the terminal host's screen model (xterm.js headless, run by node) into
// ../forge/workers/terminal/screen_model.cjs.
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

const target = ["chrome109", "firefox115", "safari16"];

// The AudioWorklet's processors load as a module of their own (audioWorklet.addModule), so they
// are a second bundle under /assets/ whose hashed name the page is built with.
const worklet = await esbuild.build({
  entryPoints: { worklet: path.join(here, "src", "worklet.ts") },
  bundle: true,
  minify: true,
  format: "esm",
  target,
  entryNames: "[name]-[hash]",
  outdir: assets,
  metafile: true,
  legalComments: "linked",
  sourcemap: false,
  logLevel: "warning",
});
const workletFile = Object.keys(worklet.metafile.outputs).find((file) => file.endsWith(".js"));
if (!workletFile) throw new Error("the worklet bundle was not written");

const result = await esbuild.build({
  entryPoints: { app: path.join(here, "src", "main.tsx") },
  define: { FORGE_WORKLET_URL: JSON.stringify(`/assets/${path.basename(workletFile)}`) },
  bundle: true,
  minify: true,
  format: "esm",
  target,
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

// The screen model runs under the machine's node beside each terminal host: one file, no imports.
const model = path.join(here, "..", "forge", "workers", "terminal", "screen_model.cjs");
await esbuild.build({
  entryPoints: [path.join(here, "screen", "model.ts")],
  bundle: true,
  minify: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  outfile: model,
  legalComments: "eof",
  sourcemap: false,
  logLevel: "warning",
});
console.log(`built ${script}, ${style}, ${path.basename(model)}`);
