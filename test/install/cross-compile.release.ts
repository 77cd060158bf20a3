/**
 * The release check (`npm run check:release`, before publishing binaries): the cross-compiles of every release
 * platform. Each needs Bun's runtime for that platform, which `bun build --compile` downloads once into its cache,
 * so this runs where the registry answers, not in the offline suite (which builds this host's platform only).
 */
import { describe, expect, test } from "bun:test";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { TARGETS, executableFormat, fileNameOf } from "../../scripts/build-all.ts";
import { tempDir } from "../../testkit/env.ts";
import { FILE_OUTPUT, requireTool, run } from "./support.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
const ASSETS = TARGETS.map(fileNameOf);
const tmp = tempDir("release");

describe("cross-compiles", () => {
  test(
    "executableFormat agrees with `file` on real bun cross-compiled executables of every target",
    async () => {
      const file = requireTool("file", "file");
      const dir = join(tmp, "cross");
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "probe.ts"), "console.log(process.platform, process.arch);\n");
      for (const target of TARGETS) {
        const out = join(dir, fileNameOf(target));
        const r = run([BUN, "build", "--compile", `--target=${target.bunTarget}`, "probe.ts", "--outfile", out], dir);
        if (r.code !== 0) throw new Error(`cross-compile ${target.bunTarget} failed:\n${r.stdout}${r.stderr}`);
        const described = run([file, "-b", out], dir).stdout;
        expect(described).toMatch(FILE_OUTPUT[target.format]);
        const header = new Uint8Array(await Bun.file(out).slice(0, 64).arrayBuffer());
        expect(executableFormat(header)).toBe(target.format);
        if (target.platform === process.platform && target.arch === process.arch) {
          expect(run([out], dir).stdout).toBe(`${target.platform} ${target.arch}\n`);
        }
        await rm(out);
      }
    },
    300_000,
  );
});

describe("npm run build:all", () => {
  test(
    "writes the five binaries and a SHA256SUMS that sha256sum -c accepts; `file` shows each platform's format",
    async () => {
      const outdir = join(tmp, "build-all");
      const build = run([BUN, join(ROOT, "scripts", "build-all.ts"), "--outdir", outdir], ROOT);
      expect(build.code).toBe(0);
      const sums = run(["sha256sum", "-c", "--strict", "SHA256SUMS"], outdir);
      expect(sums.stderr).toBe("");
      expect(sums.code).toBe(0);
      expect(sums.stdout).toBe([...ASSETS].sort().map((a) => `${a}: OK\n`).join(""));
      const file = requireTool("file", "file");
      for (const target of TARGETS) {
        expect(run([file, "-b", join(outdir, fileNameOf(target))], outdir).stdout).toMatch(FILE_OUTPUT[target.format]);
      }
      await rm(outdir, { recursive: true });
    },
    300_000,
  );
});
