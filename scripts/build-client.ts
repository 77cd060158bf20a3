/**
 * Bundles `tlsproof/client` into one ES module for runtimes that do not run TypeScript (Node, browsers through
 * any bundler): `bun scripts/build-client.ts [outdir]` writes `<outdir>/index.js` (default dist/client). Bun
 * itself imports the TypeScript sources (package.json "exports", condition "bun").
 */
import { join, resolve } from "node:path";
import { browserAdapters } from "../src/core/build-plugins.ts";

const root = join(import.meta.dir, "..");

export async function buildClientBundle(outdir: string): Promise<string> {
  const result = await Bun.build({
    entrypoints: [join(root, "src", "client", "index.ts")],
    outdir,
    target: "browser",
    format: "esm",
    naming: "index.js",
    sourcemap: "none",
    plugins: [browserAdapters],
  });
  if (!result.success) throw new Error(`client bundle failed: ${result.logs.map((log) => log.message).join("; ")}`);
  return join(outdir, "index.js");
}

if (import.meta.main) {
  const path = await buildClientBundle(resolve(root, Bun.argv[2] ?? "dist/client"));
  console.log(`built ${path}`);
}
