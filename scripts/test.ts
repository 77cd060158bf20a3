/**
 * `npm test`: the whole suite in two lanes side by side, one file at a time in each. The files that run MPC
 * sessions go in one lane: an MPC session keeps both cores busy, and two at once slow each other more than they gain
 * (BENCHMARKS.md, "The test suite's time"); every other file runs in the other lane. Each lane's output is passed
 * on whole lines; at the end each lane's time is printed, and the exit code is non-zero when either failed.
 *
 * With arguments (`npm test -- test/store`), it is plain `bun test` with them.
 */
import { existsSync } from "node:fs";
import { Glob } from "bun";

const BUN_TEST = [process.execPath, "test", "--timeout", "60000"];

/** The test files that start real MPC sessions (a file that does and is not listed only runs in the wrong lane). */
const MPC_FILES = [
  "test/cli/demo.binary.e2e.test.ts",
  "test/cli/own-api.e2e.test.ts",
  "test/cli/prove.binary.e2e.test.ts",
  "test/claims/claims.e2e.test.ts",
  "test/client/client.e2e.test.ts",
  "test/deploy/cluster.test.ts",
  "test/engine/exchange-watch.e2e.test.ts",
  "test/engine/host/engine-hosts.e2e.test.ts",
  "test/engine/worker.e2e.test.ts",
  "test/hardening/dishonest-prover.e2e.test.ts",
  "test/hardening/faults.e2e.test.ts",
  "test/hardening/remote-notary.e2e.test.ts",
  "test/hardening/sessions.e2e.test.ts",
  "test/metrics/metrics.e2e.test.ts",
  "test/notary/remote.e2e.test.ts",
  "test/notary/server.process.test.ts",
  "test/prover/call/proxy.e2e.test.ts",
  "test/prover/mpc/pool/pool-sized.e2e.test.ts",
  "test/prover/mpc/pool/pool-stall.e2e.test.ts",
  "test/prover/mpc/pool/pool.e2e.test.ts",
  "test/prover/mpc/pool/setup-retry.e2e.test.ts",
  "test/prover/pipeline.source.e2e.test.ts",
  "test/redaction/defaults.e2e.test.ts",
  "test/redaction/redaction.e2e.test.ts",
];

/** Runs `bun test` on `files`, passing its output on line by line; resolves its exit code and its time. */
async function runLane(name: string, files: string[]): Promise<{ name: string; code: number; seconds: number; files: number }> {
  const started = performance.now();
  // `./` makes each a path: a bare one is a filter that any path containing it matches.
  const child = Bun.spawn([...BUN_TEST, "--parallel=1", ...files.map((file) => `./${file}`)], { stdout: "pipe", stderr: "pipe", env: process.env });
  const passLines = async (stream: ReadableStream<Uint8Array>, write: (text: string) => void) => {
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
  };
  await Promise.all([
    passLines(child.stdout, (text) => process.stdout.write(text)),
    passLines(child.stderr, (text) => process.stderr.write(text)),
  ]);
  const code = await child.exited;
  return { name, code, seconds: (performance.now() - started) / 1000, files: files.length };
}

async function main(args: string[]): Promise<number> {
  if (args.length > 0) return Bun.spawn([...BUN_TEST, ...args], { stdio: ["inherit", "inherit", "inherit"] }).exited;
  const missing = MPC_FILES.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    console.error(`scripts/test.ts lists MPC test files that do not exist: ${missing.join(", ")}`);
    return 2;
  }
  const all = [...new Glob("test/**/*.test.ts").scanSync(".")].sort();
  const mpc = new Set(MPC_FILES);
  const lanes = await Promise.all([runLane("MPC files", MPC_FILES), runLane("other files", all.filter((file) => !mpc.has(file)))]);
  for (const lane of lanes) console.error(`${lane.name}: ${lane.files} files in ${Math.round(lane.seconds)} s, exit ${lane.code}`);
  return lanes.some((lane) => lane.code !== 0) ? 1 : 0;
}

process.exit(await main(process.argv.slice(2)));
