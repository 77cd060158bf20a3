/**
 * Packs `tlsproof/client` as an npm package of its own, `tlsproof-client-<version>.tgz`, for projects that depend on
 * it from a release (`npm install ./tlsproof-client-<version>.tgz`): the bundled ES module of scripts/build-client.ts
 * (no dependencies: everything it uses is inside) and TypeScript declarations emitted from src/ (`types/`).
 *
 *   bun scripts/pack-client.ts [outdir]      (default dist/)
 *
 * scripts/build-all.ts runs it beside the binaries and lists the tarball in SHA256SUMS.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { buildClientBundle } from "./build-client.ts";

const root = join(import.meta.dir, "..");
export const CLIENT_PACKAGE = "tlsproof-client";
export const clientTarballName = (version = pkg.version): string => `${CLIENT_PACKAGE}-${version}.tgz`;

const TYPES_ENTRY = "./types/client/index.d.ts";

/** The package's own package.json: the bundle and its declarations, nothing to install with it. */
export function clientPackageJson(version: string): Record<string, unknown> {
  return {
    name: CLIENT_PACKAGE,
    version,
    description: "tlsproof's client: prove an HTTPS exchange through a tlsproof prover, verify proofs offline (Node, Bun, browsers)",
    type: "module",
    main: "./dist/index.js",
    types: TYPES_ENTRY,
    exports: { ".": { types: TYPES_ENTRY, default: "./dist/index.js" } },
    files: ["dist", "types"],
    sideEffects: false,
    engines: { node: ">=18" },
  };
}

function run(cmd: string[], cwd: string): string {
  const result = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${cmd.slice(0, 2).join(" ")} failed (${result.exitCode}): ${result.stderr.toString().trim()}`);
  return result.stdout.toString();
}

/** Declarations of src/client/index.ts and what it imports, into `outdir` (src/'s layout). */
function emitDeclarations(outdir: string): void {
  run(
    [join(root, "node_modules", ".bin", "tsc"), "--ignoreConfig", "--declaration", "--emitDeclarationOnly", "--outDir", outdir, "--rootDir", join(root, "src"),
      "--strict", "--skipLibCheck", "--target", "ESNext", "--module", "Preserve", "--moduleResolution", "bundler", "--allowImportingTsExtensions",
      "--verbatimModuleSyntax", "--types", "bun", join(root, "src", "client", "index.ts")],
    root,
  );
}

/** Builds and packs the client into `outdir`; returns the tarball's path. */
export async function packClient(outdir: string, version = pkg.version): Promise<string> {
  const stage = await mkdtemp(join(tmpdir(), "tlsproof-client-"));
  try {
    await buildClientBundle(join(stage, "dist"));
    emitDeclarations(join(stage, "types"));
    await writeFile(join(stage, "package.json"), `${JSON.stringify(clientPackageJson(version), null, 2)}\n`);
    await writeFile(join(stage, "README.md"), `# ${CLIENT_PACKAGE}\n\ntlsproof's TypeScript client (\`prove()\`, \`verifyProof()\`, \`redact\`): see tlsproof's README, "TypeScript client".\n`);
    await mkdir(resolve(outdir), { recursive: true });
    run(["npm", "pack", "--silent", "--ignore-scripts", "--pack-destination", resolve(outdir)], stage);
    return join(resolve(outdir), clientTarballName(version));
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  console.log(`packed ${await packClient(resolve(root, Bun.argv[2] ?? "dist"))}`);
}
