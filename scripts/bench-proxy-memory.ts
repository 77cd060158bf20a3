/**
 * Proxy mode's memory and disk under large answers: one `cli prover start` (embedded notary, SQLite store) and the
 * local target; `--proofs` proxy-mode proofs of `--bytes`-byte answers, `--concurrency` clients each waiting for
 * its proof before its next call. Prints the prover process's resident memory (VmRSS at start and end, and its
 * peak, VmHWM), the data folder's growth and its bytes per proof, and the ratios: peak RSS growth ÷ the answer
 * bytes in flight (concurrency × bytes), and disk per proof ÷ answer size.
 * Usage: bun scripts/bench-proxy-memory.ts [--proofs 200] [--concurrency 8] [--bytes 1000000] [--env NAME=value …]
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { tlsFixture } from "../testkit/env.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { openStream, proofData } from "../testkit/sse.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const MiB = 1024 * 1024;

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const extraEnv = Object.fromEntries(
  process.argv.flatMap((arg, i) => (process.argv[i - 1] === "--env" ? [arg.split(/=(.*)/s).slice(0, 2) as [string, string]] : [])),
);
const PROOFS = option("proofs", 200);
const CONCURRENCY = option("concurrency", 8);
const BYTES = option("bytes", 1_000_000);

/** VmRSS and VmHWM (peak) of a process, in bytes. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

function folderBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    total += entry.isDirectory() ? folderBytes(full) : statSync(full).size;
  }
  return total;
}

/** One proof as a client makes it; the proof's length, or the failure's status and code (counted, not fatal). */
async function proxyProof(proverUrl: string, url: string): Promise<number | string> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${proverUrl}/proof/${requestId}`, 120_000);
  const response = await fetch(`${proverUrl}/proxy`, { headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
  const answer = await response.arrayBuffer();
  const [event] = await stream.events;
  if (response.status !== 200) return `${response.status} ${/"code":"(\w+)"/.exec(new TextDecoder().decode(answer))?.[1] ?? ""}`;
  return event!.event === "error" ? `proof ${event!.data}` : proofData(event!).proofText.length;
}

const tls = tlsFixture();
const target = startTarget(tls);
const prover = await startProver(SOURCE_CLI, target.port!, { PROVER_PROOF_MODE: "proxy", ...extraEnv });
const url = `https://${TARGET_HOST}:${target.port}/big?bytes=${BYTES}`;
try {
  // One proof first, so that the start figures include what the first proof loads once (code, tables).
  const first = await proxyProof(prover.url, `https://${TARGET_HOST}:${target.port}/data`);
  if (typeof first === "string") throw new Error(`the first proof failed: ${first}`);
  const pid = prover.process.pid;
  const start = memoryOf(pid);
  const diskStart = folderBytes(prover.dataDir);
  let next = 0;
  let proofBytes = 0;
  let proofs = 0;
  const failures = new Map<string, number>();
  const started = performance.now();
  const client = async () => {
    while (next < PROOFS) {
      next += 1;
      const result = await proxyProof(prover.url, url);
      if (typeof result === "string") failures.set(result, (failures.get(result) ?? 0) + 1);
      else (proofs += 1), (proofBytes += result);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  const seconds = (performance.now() - started) / 1000;
  const end = memoryOf(pid);
  const diskGrowth = folderBytes(prover.dataDir) - diskStart;
  const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
  console.log(`${PROOFS} proxy calls of ${BYTES} B answers, ${CONCURRENCY} at a time, in ${seconds.toFixed(1)} s; env ${JSON.stringify(extraEnv)}`);
  console.log(`proofs made: ${proofs}; failed: ${failures.size === 0 ? "none" : JSON.stringify(Object.fromEntries(failures))}`);
  console.log(`proof JSON: ${(proofBytes / Math.max(1, proofs) / 1e6).toFixed(2)} MB each`);
  console.log(`prover RSS: ${mib(start.rss)} after the first proof → ${mib(end.rss)} at the end; peak ${mib(end.peak)}`);
  console.log(`data folder: +${(diskGrowth / 1e6).toFixed(0)} MB, ${(diskGrowth / Math.max(1, proofs) / 1e6).toFixed(3)} MB per proof`);
  console.log(`ratio: peak RSS growth ÷ answer bytes in flight (${CONCURRENCY} × ${BYTES} B) = ${((end.peak - start.rss) / (CONCURRENCY * BYTES)).toFixed(1)}`);
  console.log(`ratio: end RSS growth ÷ answer bytes in flight = ${((end.rss - start.rss) / (CONCURRENCY * BYTES)).toFixed(1)}`);
  console.log(`ratio: disk per proof ÷ answer size = ${(diskGrowth / Math.max(1, proofs) / BYTES).toFixed(2)}`);
} finally {
  await prover.stop();
  target.stop(true);
}
