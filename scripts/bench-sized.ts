/**
 * Issue 14's measurements, run by `npm run bench:proof` (scripts/bench-proof.ts) after its own:
 * 1. cold proof of a small GET (about 200 B sent, 1 KB answer) with default settings / bare default-size session;
 * 2. a mixed workload: answers of 1, 4 and 12 KB from three origins, Poisson arrivals at half the measured
 *    sustained throughput for --mixed-s seconds: median and p95 /proxy latency / bare default-size session,
 *    and how many were served warm;
 * 3. sustained throughput with requests always waiting (one client per core, a 503 at the session cap
 *    retried after its Retry-After): proofs per minute / bare sessions per minute of the same size class,
 *    one at a time;
 * 4. memory per warm session per class (engine and resident, from /pool) and how many the pool holds at once.
 */
import { cpus, totalmem } from "node:os";
import type { Server } from "bun";
import { defaultPoolSize, maxPoolSize } from "../src/prover/pool-policy.ts";
import type { SessionSizes } from "../src/protocol/notary.ts";
import { tlsFixture } from "../test/support/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../test/support/prover.ts";
import { firstEvent } from "../test/support/sse.ts";
import { startTarget } from "../test/support/target.ts";
import { TARGET_HOST } from "../test/support/tls-fixture.ts";

type BareRun = { totalMs: number };
export type BenchBare = (runs: number, port: number, sizes: SessionSizes) => Promise<{ results: BareRun[] }>;

export interface SizedOptions {
  runs: number;
  mixedS: number;
  throughputN: number;
  log(line: string): void;
}

const DEFAULT_LIMITS = { maxSentData: 4096, maxRecvData: 16384 };
/** The answer bodies of the mix: with their headers about 1, 4 and 12 KB. */
const MIX_BODIES = [850, 3900, 12_000];
const SMALL_CLASS = { maxSentData: 1024, maxRecvData: 1536 };
const CLASSES = [SMALL_CLASS, { maxSentData: 2048, maxRecvData: 4096 }, DEFAULT_LIMITS];

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
}
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mark = (ok: boolean) => (ok ? "✓" : "✗");

/** A prover with the product's defaults (the pool size the machine allows), mapping each target port to the local target. */
function defaultProver(ports: number[]): Promise<RunningProver> {
  return startProver(SOURCE_CLI, ports[0]!, {
    PROVER_MAX_SENT_DATA: String(DEFAULT_LIMITS.maxSentData),
    PROVER_MAX_RECV_DATA: String(DEFAULT_LIMITS.maxRecvData),
    PROVER_POOL_SIZE: String(defaultPoolSize({ cores: cpus().length, totalMemoryBytes: totalmem() }, DEFAULT_LIMITS)),
    PROVER_RESOLVE: ports.map((p) => `${TARGET_HOST}:${p}:127.0.0.1`).join(","),
  });
}

async function proof(prover: RunningProver, port: number, body: number) {
  const requestId = crypto.randomUUID();
  const event = firstEvent(`${prover.url}/proof/${requestId}`, 900_000);
  const started = performance.now();
  const response = await fetch(`${prover.url}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${port}/big?bytes=${body}`, "T-REQUEST-ID": requestId },
  });
  const text = await response.text();
  const responseMs = performance.now() - started;
  if (response.status === 503) return { ok: false, busy: true, status: 503, error: text, responseMs, proofMs: responseMs };
  const outcome = await event;
  const ok = response.status === 200 && outcome.event === "message";
  return { ok, busy: false, status: response.status, error: ok ? "" : text.slice(0, 200), responseMs, proofMs: performance.now() - started };
}

/** A client with requests always waiting: a 503 (the prover's session cap) is retried after its Retry-After. */
async function proofWhenAdmitted(prover: RunningProver, port: number, body: number) {
  for (;;) {
    const r = await proof(prover, port, body);
    if (!r.busy) return r;
    await Bun.sleep(5_000);
  }
}

const poolOf = async (prover: RunningProver) =>
  (await (await fetch(`${prover.url}/pool`)).json()) as {
    ready: number;
    warming: number;
    served: { ready: number; warming: number; onDemand: number };
    memory: { rssBytes: number; engineBytes: number };
  };

async function coldSmallGet(runs: number, port: number) {
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const prover = await defaultProver([port]); // a fresh process: nothing learned, nothing warm
    try {
      const r = await proof(prover, port, MIX_BODIES[0]!);
      if (!r.ok) throw new Error(`cold small GET failed: ${r.status} ${r.error}`);
      times.push(r.proofMs);
    } finally {
      await prover.stop();
    }
  }
  return median(times);
}

async function throughput(n: number, port: number) {
  const prover = await defaultProver([port]);
  try {
    // Learn the endpoint first, so the run measures steady state rather than the first repeat.
    await proof(prover, port, MIX_BODIES[0]!);
    let left = n;
    const started = performance.now();
    const client = async () => {
      while (left-- > 0) {
        const r = await proofWhenAdmitted(prover, port, MIX_BODIES[0]!);
        if (!r.ok) throw new Error(`throughput proof failed: ${r.status} ${r.error}`);
      }
    };
    await Promise.all(cpus().map(client));
    return (n / (performance.now() - started)) * 60_000;
  } finally {
    await prover.stop();
  }
}

async function mixed(seconds: number, perMinute: number, ports: number[]) {
  const prover = await defaultProver(ports);
  try {
    const latencies: number[] = [];
    let failed = 0;
    let busy = 0;
    const before = await poolOf(prover);
    const running: Promise<void>[] = [];
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end) {
      const origin = Math.floor(Math.random() * ports.length);
      running.push(
        proof(prover, ports[origin]!, MIX_BODIES[origin]!).then((r) => {
          if (r.ok) latencies.push(r.responseMs);
          else if (r.busy) busy++;
          else failed++;
        }),
      );
      // Poisson arrivals: exponential gaps (cut at the end of the run).
      await Bun.sleep(Math.min((-Math.log(1 - Math.random()) * 60_000) / perMinute, Math.max(0, end - performance.now())));
    }
    await Promise.all(running);
    const after = await poolOf(prover);
    const warm = after.served.ready + after.served.warming - before.served.ready - before.served.warming;
    return { latencies, failed, busy, warm, requests: running.length };
  } finally {
    await prover.stop();
  }
}

/** Engine and resident memory one ready session of each class adds, from /pool, in one prover. */
async function memoryPerClass(port: number) {
  const prover = await startProver(SOURCE_CLI, port, {
    PROVER_MAX_SENT_DATA: String(DEFAULT_LIMITS.maxSentData),
    PROVER_MAX_RECV_DATA: String(DEFAULT_LIMITS.maxRecvData),
  });
  const rows: { cls: string; engineMiB: number; rssMiB: number; heldAtOnce: number }[] = [];
  try {
    for (const cls of CLASSES) {
      const name = `${cls.maxSentData}/${cls.maxRecvData}`;
      const before = await poolOf(prover);
      const prepared = await fetch(`${prover.url}/prepare`, {
        headers: { "T-PREPARE": "1", "T-PROXY-URL": `https://${TARGET_HOST}:${port}/`, "T-SESSION-CLASS": name },
      });
      if (prepared.status !== 200) throw new Error(`prepare ${name}: ${prepared.status} ${await prepared.text()}`);
      let status = before;
      while (status.ready < before.ready + 1) {
        await Bun.sleep(500);
        status = await poolOf(prover);
      }
      rows.push({
        cls: name,
        engineMiB: Math.round((status.memory.engineBytes - before.memory.engineBytes) / 2 ** 20),
        rssMiB: Math.round((status.memory.rssBytes - before.memory.rssBytes) / 2 ** 20),
        heldAtOnce: maxPoolSize(cls),
      });
    }
    return rows;
  } finally {
    await prover.stop();
  }
}

export async function benchSized(benchBare: BenchBare, options: SizedOptions): Promise<string[]> {
  const targets: Server<undefined>[] = MIX_BODIES.map(() => startTarget(tlsFixture()));
  const ports = targets.map((t) => t.port!);
  try {
    const bareDefault = median((await benchBare(options.runs, ports[0]!, DEFAULT_LIMITS)).results.map((r) => r.totalMs));
    options.log(`bare default-size session: ${s(bareDefault)}`);
    const cold = await coldSmallGet(options.runs, ports[0]!);
    options.log(`cold small GET: ${s(cold)}`);
    const bareSmall = median((await benchBare(options.runs, ports[0]!, SMALL_CLASS)).results.map((r) => r.totalMs));
    const barePerMinute = 60_000 / bareSmall;
    const proofsPerMinute = await throughput(options.throughputN, ports[0]!);
    options.log(`throughput: ${proofsPerMinute.toFixed(2)} proofs/min vs bare ${barePerMinute.toFixed(2)}`);
    const mix = await mixed(options.mixedS, proofsPerMinute / 2, ports);
    const memory = await memoryPerClass(ports[0]!);

    const coldRatio = cold / bareDefault;
    const mixMedian = median(mix.latencies) / bareDefault;
    const mixP95 = quantile(mix.latencies, 0.95) / bareDefault;
    const throughputRatio = proofsPerMinute / barePerMinute;
    return [
      `Bare default-size session (4096/16384): ${s(bareDefault)}; bare ${SMALL_CLASS.maxSentData}/${SMALL_CLASS.maxRecvData} session: ${s(bareSmall)} (medians of ${options.runs}).`,
      "",
      "| Measure | Value | Ratio | Goal |",
      "|---|---|---|---|",
      `| 1. Cold small GET (≈200 B sent, 1 KB answer), default settings, to the proof event | ${s(cold)} | / bare default ${coldRatio.toFixed(2)} | ≤ 0.45 ${mark(coldRatio <= 0.45)} |`,
      `| 2. Mixed workload (1/4/12 KB, ${options.mixedS} s at ${(proofsPerMinute / 2).toFixed(2)}/min): /proxy median | ${s(median(mix.latencies))} | / bare default ${mixMedian.toFixed(2)} | ≤ 0.2 ${mark(mixMedian <= 0.2)} |`,
      `| 2. Mixed workload: /proxy p95 | ${s(quantile(mix.latencies, 0.95))} | / bare default ${mixP95.toFixed(2)} | ≤ 0.6 ${mark(mixP95 <= 0.6)} |`,
      `| 2. Mixed workload: served warm | ${mix.warm} of ${mix.requests} (${mix.busy} refused 503 at the session cap, ${mix.failed} failed) | — | — |`,
      `| 3. Sustained throughput (${options.throughputN} proofs of 1 KB answers, ${cpus().length} clients) | ${proofsPerMinute.toFixed(2)} proofs/min | / bare sessions per minute ${throughputRatio.toFixed(2)} | ≥ 0.9 ${mark(throughputRatio >= 0.9)} |`,
      ...memory.map(
        (m) => `| 4. One warm session of class ${m.cls} | engine +${m.engineMiB} MiB, resident +${m.rssMiB} MiB | pool ceiling in one engine (pool-policy model): ${m.heldAtOnce} | — |`,
      ),
    ];
  } finally {
    for (const t of targets) t.stop(true);
  }
}
