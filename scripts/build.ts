/**
 * Compiles one self-contained executable: `bun scripts/build.ts [--target bun-linux-x64] [--outfile dist/cli]`.
 *
 * The wasm is embedded as a file. tlsn-wasm's thread-spawn snippet cannot work inside a binary (it makes
 * workers from files beside itself), so its import is redirected to src/engine/spawn.ts
 * (src/engine/spawn-snippet.ts), which starts the binary's own worker entry, src/engine/worker.ts, built as a
 * second entrypoint.
 * libsecp256k1's wasm is embedded as a file too (src/core/build-plugins.ts).
 * The binary ignores any .env or bunfig.toml in the folder it runs from.
 */
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { spawnSnippetRedirect } from "../src/engine/spawn-snippet.ts";
import { libsecp256k1InBinary } from "../src/core/build-plugins.ts";
import { buildViewerHtml } from "../src/viewer/bundle.ts";

const root = join(import.meta.dir, "..");
const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { target: { type: "string" }, outfile: { type: "string", default: "dist/cli" } },
});

/** Output of a git command in the project, or "" outside a git checkout. */
function git(args: string[]): string {
  const result = Bun.spawnSync(["git", ...args], { cwd: root, stdout: "pipe", stderr: "ignore" });
  return result.exitCode === 0 ? result.stdout.toString().trim() : "";
}

const outfile = resolve(root, values.outfile);
const result = await Bun.build({
  entrypoints: [join(root, "index.ts"), join(root, "src", "engine", "worker.ts")],
  compile: {
    ...(values.target ? { target: values.target as Bun.Build.CompileTarget } : {}),
    outfile,
    autoloadDotenv: false,
    autoloadBunfig: false,
  },
  define: {
    TLSPROOF_COMMIT: JSON.stringify(git(["rev-parse", "HEAD"])),
    TLSPROOF_COMMIT_TIME: JSON.stringify(git(["show", "-s", "--format=%cI", "HEAD"])),
    // The binary has no sources to bundle the viewer page from: it carries the page built now.
    TLSPROOF_VIEWER_HTML: JSON.stringify(await buildViewerHtml()),
  },
  plugins: [spawnSnippetRedirect, libsecp256k1InBinary],
  minify: true,
  sourcemap: "none",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${values.outfile}${values.target ? ` (${values.target})` : ""}`);
