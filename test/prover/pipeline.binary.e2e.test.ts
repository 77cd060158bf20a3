import { beforeAll, expect } from "bun:test";
import { existsSync } from "node:fs";
import { BINARY_CLI, BUN, REPO } from "../../testkit/prover.ts";
import { pipelineSuite } from "../../testkit/pipeline-suite.ts";

/**
 * The compiled binary is built here, so this always tests the current code; unless .ci/run has just built it
 * from this checkout (TLSPROOF_TEST_DIST_FRESH=1), which it does before any test runs.
 */
beforeAll(() => {
  if (process.env.TLSPROOF_TEST_DIST_FRESH === "1") {
    expect(existsSync(BINARY_CLI[0]!)).toBe(true);
    return;
  }
  const build = Bun.spawnSync([BUN, "scripts/build.ts"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  expect(build.stderr.toString()).toBe("");
  expect(build.exitCode).toBe(0);
}, 300_000);

pipelineSuite("proof pipeline from the compiled binary (dist/cli)", BINARY_CLI);
