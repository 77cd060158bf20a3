/**
 * Cross-compiles `cli` for every release platform into dist/, packs the TypeScript client beside them
 * (`tlsproof-client-<version>.tgz`, scripts/pack-client.ts), and writes dist/SHA256SUMS for all of them.
 *
 *   bun scripts/build-all.ts [--targets linux-x64,linux-arm64,...] [--outdir dist] [--build-script scripts/build.ts]
 *
 * Each target is one run of scripts/build.ts (which embeds the wasm, defines the version and
 * disables .env/bunfig autoload); this script only loops, checks each output is an executable of
 * the right format, and writes the checksums that install.sh verifies.
 */
import { createHash } from "node:crypto";
import { mkdir, open, rm } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { packClient } from "./pack-client.ts";

export type ExecutableFormat = "ELF x86-64" | "ELF aarch64" | "Mach-O x86_64" | "Mach-O arm64";

export interface Target {
  /** Short name used in --targets and in the file name: cli-<name>. */
  readonly name: string;
  /** Bun's --target for `bun build --compile`. */
  readonly bunTarget: string;
  readonly format: ExecutableFormat;
  /** process.platform / process.arch on which this build runs natively. */
  readonly platform: NodeJS.Platform;
  readonly arch: string;
}

export const TARGETS: readonly Target[] = [
  { name: "linux-x64", bunTarget: "bun-linux-x64", format: "ELF x86-64", platform: "linux", arch: "x64" },
  { name: "linux-x64-baseline", bunTarget: "bun-linux-x64-baseline", format: "ELF x86-64", platform: "linux", arch: "x64" },
  { name: "linux-arm64", bunTarget: "bun-linux-arm64", format: "ELF aarch64", platform: "linux", arch: "arm64" },
  { name: "darwin-x64", bunTarget: "bun-darwin-x64", format: "Mach-O x86_64", platform: "darwin", arch: "x64" },
  { name: "darwin-arm64", bunTarget: "bun-darwin-arm64", format: "Mach-O arm64", platform: "darwin", arch: "arm64" },
];

export const fileNameOf = (target: Target): string => `cli-${target.name}`;

/** `sha256sum` output for the given files: "<hex>  <name>\n" per file, sorted by name. */
export function formatSha256Sums(entries: ReadonlyArray<{ readonly name: string; readonly sha256: string }>): string {
  const seen = new Set<string>();
  for (const { name, sha256 } of entries) {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a lowercase SHA-256 hex digest for ${name}: ${sha256}`);
    if (name === "" || /[\s\\/]/.test(name)) throw new Error(`file name unfit for SHA256SUMS: ${JSON.stringify(name)}`);
    if (seen.has(name)) throw new Error(`duplicate entry in SHA256SUMS: ${name}`);
    seen.add(name);
  }
  return [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ name, sha256 }) => `${sha256}  ${name}\n`)
    .join("");
}

/** The executable format named by a file's first bytes (at least 20), or undefined if none we ship. */
export function executableFormat(header: Uint8Array): ExecutableFormat | undefined {
  if (header.length < 20) return undefined;
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  // ELF: 7f 'E' 'L' 'F', class 2 (64-bit), data 1 (little-endian), e_type EXEC(2)/DYN(3), e_machine.
  if (view.getUint32(0, false) === 0x7f454c46 && header[4] === 2 && header[5] === 1) {
    const type = view.getUint16(16, true);
    if (type !== 2 && type !== 3) return undefined;
    const machine = view.getUint16(18, true);
    if (machine === 0x3e) return "ELF x86-64";
    if (machine === 0xb7) return "ELF aarch64";
    return undefined;
  }
  // Mach-O 64-bit little-endian: magic feedfacf, cputype, cpusubtype, filetype MH_EXECUTE(2).
  if (view.getUint32(0, true) === 0xfeedfacf) {
    if (view.getUint32(12, true) !== 2) return undefined;
    const cpu = view.getUint32(4, true);
    if (cpu === 0x01000007) return "Mach-O x86_64";
    if (cpu === 0x0100000c) return "Mach-O arm64";
  }
  return undefined;
}

async function readHeader(path: string): Promise<Uint8Array> {
  const file = await open(path, "r");
  try {
    const buf = new Uint8Array(64);
    const { bytesRead } = await file.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of Bun.file(path).stream()) hash.update(chunk);
  return hash.digest("hex");
}

export interface BuildAllOptions {
  targets: readonly Target[];
  /** Folder for the binaries and SHA256SUMS (dist/). */
  outdir: string;
  /** The single-target build: `bun <buildScript> --target <bun-target> --outfile <path>`. */
  buildScript: string;
  cwd: string;
  log?: (line: string) => void;
}

/** Parses `--targets a,b`, `--outdir dir`, `--build-script path` (each also as `--flag=value`). */
export function parseArgs(argv: readonly string[], root: string): BuildAllOptions {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const eq = arg.indexOf("=");
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (!["--targets", "--outdir", "--build-script"].includes(flag)) {
      throw new Error(`unknown argument: ${arg} (usage: bun scripts/build-all.ts [--targets ${TARGETS.map((t) => t.name).join(",")}] [--outdir dist] [--build-script scripts/build.ts])`);
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined || value === "") throw new Error(`${flag} needs a value`);
    values.set(flag, value);
  }
  const names = values.get("--targets")?.split(",");
  const targets = names === undefined ? [...TARGETS] : names.map((name) => {
    const target = TARGETS.find((t) => t.name === name.trim());
    if (!target) throw new Error(`unknown target: ${name} (known: ${TARGETS.map((t) => t.name).join(", ")})`);
    return target;
  });
  return {
    targets,
    outdir: resolve(root, values.get("--outdir") ?? "dist"),
    buildScript: resolve(root, values.get("--build-script") ?? join("scripts", "build.ts")),
    cwd: root,
  };
}

/** Builds each target in turn, checks it, packs the client, and writes SHA256SUMS; returns its entries. */
export async function buildAll(opts: BuildAllOptions): Promise<{ name: string; sha256: string }[]> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const { outdir, buildScript } = opts;
  if (!(await Bun.file(buildScript).exists())) throw new Error(`${buildScript} is missing: it compiles one target`);
  await mkdir(outdir, { recursive: true });
  // A stale list must not outlive a failed build.
  await rm(join(outdir, "SHA256SUMS"), { force: true });

  const entries: { name: string; sha256: string }[] = [];
  for (const target of opts.targets) {
    const outfile = join(outdir, fileNameOf(target));
    await rm(outfile, { force: true });
    log(`build-all: ${target.bunTarget} -> ${outfile}`);
    const started = performance.now();
    // Sequential on purpose: each compile is memory- and CPU-heavy.
    // --outfile relative to cwd: scripts/build.ts joins it onto the project root, so an absolute path would break.
    const proc = Bun.spawn([process.execPath, buildScript, "--target", target.bunTarget, "--outfile", relative(opts.cwd, outfile)], {
      cwd: opts.cwd,
      stdio: ["ignore", "inherit", "inherit"],
    });
    const code = await proc.exited;
    if (code !== 0) throw new Error(`${basename(buildScript)} --target ${target.bunTarget} exited with ${code}`);
    if (!(await Bun.file(outfile).exists())) throw new Error(`${basename(buildScript)} did not write ${outfile}`);

    const format = executableFormat(await readHeader(outfile));
    if (format !== target.format) {
      throw new Error(`${basename(outfile)} is ${format ?? "not a known executable"}, expected ${target.format}`);
    }
    if (target.platform === process.platform && target.arch === process.arch) {
      // Runs here: the compiled-in version must be package.json's.
      const run = Bun.spawnSync([outfile, "--version"], { cwd: outdir, stdout: "pipe", stderr: "pipe" });
      const printed = run.stdout.toString().trim();
      if (run.exitCode !== 0 || !(printed === pkg.version || printed.startsWith(`${pkg.version} (`))) {
        throw new Error(`${basename(outfile)} --version printed ${JSON.stringify(printed)} (exit ${run.exitCode}), expected ${pkg.version}`);
      }
    }
    const sha256 = await sha256File(outfile);
    entries.push({ name: basename(outfile), sha256 });
    log(`build-all: ${basename(outfile)} ${format} ${sha256} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }

  const client = await packClient(outdir);
  entries.push({ name: basename(client), sha256: await sha256File(client) });
  log(`build-all: ${basename(client)} (the client, for npm install)`);

  await Bun.write(join(outdir, "SHA256SUMS"), formatSha256Sums(entries));
  log(`build-all: wrote ${join(outdir, "SHA256SUMS")} (${entries.length} files)`);
  return entries;
}

if (import.meta.main) {
  const root = resolve(import.meta.dir, "..");
  try {
    await buildAll(parseArgs(Bun.argv.slice(2), root));
  } catch (error: unknown) {
    console.error(`build-all: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
