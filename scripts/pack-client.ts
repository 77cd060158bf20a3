/**
 * Packs `tlsproof/client` as an npm package of its own, `tlsproof-client-<version>.tgz`, for projects that depend on
 * it from a release (`npm install ./tlsproof-client-<version>.tgz`): the bundled ES module of scripts/build-client.ts
 * (no dependencies: everything it uses is inside) and TypeScript declarations emitted from src/ (`types/`): only
 * those its entry needs, and they need nothing else, so a strict project compiles them without `skipLibCheck`.
 *
 *   bun scripts/pack-client.ts [outdir]      (default dist/)
 *
 * scripts/build-all.ts runs it beside the binaries and lists the tarball in SHA256SUMS.
 */
import { mkdir, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
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

/**
 * Keeps of the emitted declarations those the entry needs, as tsc finds them for a consumer (strict, no
 * skipLibCheck, no @types), and refuses declarations that need anything else than TypeScript's own libraries:
 * valibot's or @noble/curves' types, Bun's, anything the package does not ship.
 */
async function keepSelfContainedDeclarations(stage: string): Promise<void> {
  const dir = await realpath(join(stage, "types"));
  const tsc = Bun.spawnSync(
    [join(root, "node_modules", ".bin", "tsc"), "--ignoreConfig", "--noEmit", "--listFiles", "--strict", "--target", "ES2022", "--module", "Preserve",
      "--moduleResolution", "bundler", "--types", "", join(dir, "..", TYPES_ENTRY)],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  // tsc prints its errors among the files it lists.
  const listed = tsc.stdout.toString().split("\n").filter(Boolean);
  const errors = listed.filter((line) => /error TS\d+:/.test(line));
  if (tsc.exitCode !== 0 || errors.length > 0) {
    throw new Error(`the client's declarations do not compile on their own: ${errors.join("; ") || tsc.stderr.toString().trim()}`);
  }
  const libDir = dirname(listed.find((file) => basename(file) === "lib.es5.d.ts") ?? "");
  const needed = new Set(listed.filter((file) => dirname(file) !== libDir));
  const foreign = [...needed].filter((file) => !file.startsWith(`${dir}/`));
  if (foreign.length > 0) throw new Error(`the client's declarations need files the package does not ship: ${foreign.join(", ")}`);
  for (const file of await readdir(dir, { recursive: true })) {
    if (file.endsWith(".d.ts") && !needed.has(join(dir, file))) await rm(join(dir, file));
  }
}

/** Builds and packs the client into `outdir`; returns the tarball's path. */
export async function packClient(outdir: string, version = pkg.version): Promise<string> {
  const stage = await mkdtemp(join(tmpdir(), "tlsproof-client-"));
  try {
    await buildClientBundle(join(stage, "dist"));
    emitDeclarations(join(stage, "types"));
    await keepSelfContainedDeclarations(stage);
    await writeFile(join(stage, "package.json"), `${JSON.stringify(clientPackageJson(version), null, 2)}\n`);
    await writeFile(join(stage, "README.md"), `# ${CLIENT_PACKAGE}\n\ntlsproof's TypeScript client (\`prove()\`, \`verifyProof()\`, \`redact\`): see tlsproof's docs/client.md.\n`);
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
