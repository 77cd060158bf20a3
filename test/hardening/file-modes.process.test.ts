import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";

/**
 * What the command line makes on disk is its operator's alone, whatever the umask: under umask 000 the prover's
 * data folder is 0700 and its store 0600, and the folders `cli testca --out` and `cli notary keygen --out` make are
 * 0700. Children inherit the umask of this process, set for the file.
 */
const modeOf = (path: string): number => statSync(path).mode & 0o777;

let umask: number;
let target: Server<undefined>;
beforeAll(() => {
  umask = process.umask(0);
  target = startTarget(tlsFixture());
});
afterAll(() => {
  process.umask(umask);
  target?.stop(true);
});

describe("file modes under umask 000", () => {
  test("the prover's data folder (and the parents it made) 0700; messages.sqlite, its WAL and every key 0600", async () => {
    const root = scratchDir("modes");
    const dataDir = join(root, "made", "data");
    const prover = await startProver(SOURCE_CLI, target.port!, { PROVER_DATA_DIR: dataDir });
    try {
      expect(modeOf(join(root, "made"))).toBe(0o700);
      expect(modeOf(dataDir)).toBe(0o700);
      for (const file of ["messages.sqlite", "notary.key", "node.key"]) expect({ file, mode: modeOf(join(dataDir, file)) }).toEqual({ file, mode: 0o600 });
      const wal = join(dataDir, "messages.sqlite-wal");
      if (existsSync(wal)) expect(modeOf(wal)).toBe(0o600);
    } finally {
      expect(await prover.stop()).toBe(0);
    }
  }, 90_000);

  test("cli testca --out and cli notary keygen --out make their folders 0700", async () => {
    const root = scratchDir("modes");
    const ca = await runCli(SOURCE_CLI, ["testca", "--out", join(root, "ca", "inner"), "--name", "api.example.test"]);
    expect(ca.exitCode).toBe(0);
    expect(modeOf(join(root, "ca"))).toBe(0o700);
    expect(modeOf(join(root, "ca", "inner"))).toBe(0o700);
    const keys = await runCli(SOURCE_CLI, ["notary", "keygen", "--out", join(root, "keys")]);
    expect(keys.exitCode).toBe(0);
    expect(modeOf(join(root, "keys"))).toBe(0o700);
    expect(modeOf(join(root, "keys", "notary.key"))).toBe(0o600);
  }, 60_000);
});
