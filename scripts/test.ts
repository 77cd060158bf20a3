/**
 * `npm test`: the whole suite, in two workers side by side (the 2 cores CI has). An MPC session keeps both cores
 * busy, and two at once slow each other more than they gain (BENCHMARKS.md, "The test suite's time"), so the
 * files that start MPC sessions go one after another in the first worker, heaviest first, while the second runs
 * every other file, two at a time; once done, the second takes MPC files from the light end until none is left. Output passes on
 * in whole lines; at the end each MPC file's time, each worker's and the MPC files' in all are printed, and the exit code is non-zero
 * when any run failed.
 *
 * With arguments (`npm test -- test/store`), it is plain `bun test` with them.
 */
import { existsSync } from "node:fs";
import { Glob } from "bun";
import { withTestPostgres } from "../testkit/postgres.ts";

const BUN_TEST = [process.execPath, "test", "--timeout", "60000"];

/**
 * The test files that start real MPC sessions, heaviest first (by their times in CI, 2026-12-03). A file that starts one and is
 * not listed only runs beside another MPC file.
 */
const MPC_FILES = [
  "test/hardening/dishonest-prover.e2e.test.ts",
  "test/prover/mpc/pool/pool.e2e.test.ts",
  "test/hardening/faults.e2e.test.ts",
  "test/hardening/sessions.e2e.test.ts",
  "test/prover/mpc/pool/pool-stall.e2e.test.ts",
  "test/prover/mpc/pool/pool-sized.e2e.test.ts",
  "test/engine/worker.e2e.test.ts",
  "test/claims/claims.e2e.test.ts",
  "test/engine/host/engine-hosts.e2e.test.ts",
  "test/engine/exchange-watch.e2e.test.ts",
  "test/prover/call/proxy.e2e.test.ts",
  "test/redaction/defaults.e2e.test.ts",
  "test/prover/pipeline.source.e2e.test.ts",
  "test/cli/own-api.e2e.test.ts",
  "test/cli/demo.binary.e2e.test.ts",
  "test/hardening/remote-notary.e2e.test.ts",
  "test/redaction/redaction.e2e.test.ts",
  "test/notary/remote.e2e.test.ts",
  "test/prover/mpc/pool/setup-retry.e2e.test.ts",
  "test/cli/prove.binary.e2e.test.ts",
  "test/deploy/cluster.test.ts",
  "test/contracts/real-proof.e2e.test.ts",
  "test/metrics/metrics.e2e.test.ts",
];

/**
 * The other files wait more than they compute (alone, one at a time: 447 s, of which 249 s of CPU): two at a time
 * fill each other's waits beside the MPC worker.
 */
const OTHER_FILES_AT_ONCE = 2;

interface Run {
  code: number;
  seconds: number;
}

/** Passes a stream on in whole lines, so that two runs' output never mixes inside a line. */
async function passLines(stream: ReadableStream<Uint8Array>, write: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) {
    pending += decoder.decode(chunk, { stream: true });
    const end = pending.lastIndexOf("\n");
    if (end < 0) continue;
    write(pending.slice(0, end + 1));
    pending = pending.slice(end + 1);
  }
  if (pending !== "") write(`${pending}\n`);
}

/**
 * One `bun test` over `files`, each in a fresh global (`./`: a path, where a bare one would be a filter), `parallel`
 * files at a time.
 */
async function run(files: readonly string[], parallel = 1): Promise<Run> {
  const started = performance.now();
  const child = Bun.spawn([...BUN_TEST, `--parallel=${parallel}`, ...files.map((file) => `./${file}`)], { stdout: "pipe", stderr: "pipe", env: process.env });
  await Promise.all([passLines(child.stdout, (text) => process.stdout.write(text)), passLines(child.stderr, (text) => process.stderr.write(text))]);
  return { code: await child.exited, seconds: (performance.now() - started) / 1000 };
}

/** The two workers over one list of MPC files: the first takes from its heavy end, the second from its light end. */
async function runSuite(mpc: string[], others: string[]): Promise<number> {
  const runs: Run[] = [];
  let mpcSeconds = 0;
  const mpcTimes: string[] = [];
  const mpcFile = async (take: () => string | undefined) => {
    for (let file = take(); file !== undefined; file = take()) {
      const done = await run([file]);
      runs.push(done);
      mpcSeconds += done.seconds;
      mpcTimes.push(`${Math.round(done.seconds)} s ${file}`);
    }
  };
  const timed = async (work: () => Promise<void>) => {
    const started = performance.now();
    await work();
    return Math.round((performance.now() - started) / 1000);
  };
  const [first, second] = await Promise.all([
    timed(() => mpcFile(() => mpc.shift())),
    timed(async () => {
      runs.push(await run(others, OTHER_FILES_AT_ONCE));
      await mpcFile(() => mpc.pop());
    }),
  ]);
  console.error(`each MPC file, its process's whole time:\n${mpcTimes.map((line) => `  ${line}`).join("\n")}`);
  console.error(`workers: ${first} s (MPC files) and ${second} s (the other files, then MPC files); the MPC files' own time: ${Math.round(mpcSeconds)} s`);
  return runs.some((done) => done.code !== 0) ? 1 : 0;
}

async function main(args: string[]): Promise<number> {
  if (args.length > 0) return Bun.spawn([...BUN_TEST, ...args], { stdio: ["inherit", "inherit", "inherit"] }).exited;
  const missing = MPC_FILES.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    console.error(`scripts/test.ts lists MPC test files that do not exist: ${missing.join(", ")}`);
    return 2;
  }
  const listed = new Set(MPC_FILES);
  const others = [...new Glob("test/**/*.test.ts").scanSync(".")].filter((file) => !listed.has(file)).sort();
  // One cluster for every process of the run, not one per process.
  return withTestPostgres(() => runSuite([...MPC_FILES], others));
}

process.exit(await main(process.argv.slice(2)));
