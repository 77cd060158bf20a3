// Mutation testing (docs/testing.md): one part at a time, chosen by MUTATION_PART (scripts/mutation.mjs sets it).
// Each part mutates the code that decides what a notary signs or a verifier accepts and runs only the unit files
// that test it, through the command runner: one mutant costs a `bun test` of those files, seconds.
import { PARTS } from "./scripts/mutation-parts.mjs";

const name = process.env.MUTATION_PART ?? "";
const part = PARTS[name];
if (!part) throw new Error(`MUTATION_PART must be one of ${Object.keys(PARTS).join(", ")}`);

// MUTATION_TESTS (space-separated test files) narrows the run to some of the part's files while working on one source
// file: a mutant those files kill, the whole list kills too (with the others it can only fail sooner).
const tests = process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(/\s+/).filter(Boolean) : part.tests;
const ignored = ["**/*.e2e.test.ts", "**/*.process.test.ts", "**/*.browser.test.ts", ...(part.skip ?? [])].map((pattern) => `--path-ignore-patterns='${pattern}'`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "command",
  commandRunner: { command: `bun test --timeout 20000 --bail ${ignored.join(" ")} ${tests.join(" ")}` },
  mutate: part.mutate,
  ignorePatterns: ["dist", ".tmp", "reports", ".stryker-tmp", "node_modules"],
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  reporters: ["clear-text", "progress", "json"],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 95, low: 90, break: 90 },
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 2),
  timeoutMS: 10_000,
  tempDirName: ".stryker-tmp",
  // Bun runs the sandbox's TypeScript as it is: no tsconfig rewriting (Stryker's rewriter needs an older TypeScript API).
  tsconfigFile: "no-tsconfig-for-stryker.json",
  cleanTempDir: "always",
};
