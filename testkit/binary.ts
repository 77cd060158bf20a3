import { beforeAll, expect } from "bun:test";
import { existsSync } from "node:fs";
import { BINARY_CLI, BUN, REPO } from "./prover.ts";

/**
 * The compiled binary (dist/cli) for the tests of a file, built before them so that they always test the current
 * code (once per test process, however many files ask); unless .ci/run has just built it from this checkout
 * (TLSPROOF_TEST_DIST_FRESH=1), which it does before any test runs.
 */
let built: Promise<void> | undefined;

async function build(): Promise<void> {
  const child = Bun.spawn([BUN, "scripts/build.ts"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  expect(stderr).toBe("");
  expect(exitCode).toBe(0);
}

export function useBuiltBinary(): void {
  beforeAll(async () => {
    if (process.env.TLSPROOF_TEST_DIST_FRESH === "1") {
      expect(existsSync(BINARY_CLI[0]!)).toBe(true);
      return;
    }
    await (built ??= build());
  }, 300_000);
}
