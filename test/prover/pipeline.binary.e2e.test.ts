import { beforeAll, expect } from "bun:test";
import { BINARY_CLI, BUN, REPO } from "../support/prover.ts";
import { pipelineSuite } from "../support/pipeline-suite.ts";

// The compiled binary is built here, so this always tests the current code.
beforeAll(() => {
  const build = Bun.spawnSync([BUN, "scripts/build.ts"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  expect(build.stderr.toString()).toBe("");
  expect(build.exitCode).toBe(0);
}, 300_000);

pipelineSuite("proof pipeline from the compiled binary (dist/cli)", BINARY_CLI);
