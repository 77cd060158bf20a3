/**
 * The sized-session and warm-pool measurements, run by `npm run bench:proof` (scripts/bench-proof.ts) after its own:
 * 1. cold proof of a small GET (about 200 B sent, 1 KB answer) with default settings / bare default-size session;
 * 2. a mixed workload: answers of 1, 4 and 12 KB from three origins, Poisson arrivals at half the measured
 *    sustained throughput for --mixed-s seconds: median and p95 /proxy latency / bare default-size session,
 *    and how many were served warm;
 * 3. sustained throughput with requests always waiting (one client per core, a 503 at the session cap
 *    retried): proofs per minute between the first proof and the last, every client at work throughout, / bare
 *    sessions per minute of the same size class, one at a time (and the whole run's rate, fill and drain included);
 * 4. memory per warm session per class (engine and resident, from /pool) and how many the pool holds at once;
 * and, behind ratio 2: warm 4 KB requests arriving 1, 2 and 3 at once, each slower than alone by how much.
 */
import { writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { defaultHostCount, fitsBeside, sessionCost } from "../src/engine/host/placement.ts";
import { sessionEngineBytes } from "../src/engine/memory.ts";
import { defaultPoolSize, maxPoolSize } from "../src/prover/mpc/pool/pool-policy.ts";
import type { HostMemory } from "../src/engine/host/protocol.ts";
import type { SessionSizes } from "../src/core/session-sizes.ts";
import { tlsFixture } from "../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { firstEvent } from "../testkit/sse.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST, trustedIdentityFor } from "../testkit/tls-fixture.ts";
import { BENCH_PROVER_ENV } from "./bench-env.ts";

const MACHINE = { cores: cpus().length, totalMemoryBytes: totalmem() };
/** The default engines: the machine's host count and an embedded notary. */
const ENGINES = { hosts: defaultHostCount(MACHINE, true), embeddedNotary: true };

type BareRun = { totalMs: number };
export type BenchBare = (runs: number, port: number, sizes: SessionSizes) => Promise<{ results: BareRun[] }>;

export interface SizedOptions {
  runs: number;
  mixedS: number;
  /** Seeds the mix's arrivals and origins: runs with one seed meet the same sequence of requests. */
  mixSeed: number;
  throughputN: number;
  /** The measures to run; the bare default-size session, every ratio's denominator, always runs. */
  only: readonly SizedPart[];
  log(line: string): void;
}

const DEFAULT_LIMITS = { maxSentData: 4096, maxRecvData: 16384 };
/** The answer bodies of the mix: with their headers about 1, 4 and 12 KB. */
const MIX_BODIES = [850, 3900, 12_000];
const SMALL_CLASS = { maxSentData: 1024, maxRecvData: 1536 };
const MEDIUM_CLASS = { maxSentData: 2048, maxRecvData: 6144 };
/** The class each of MIX_BODIES needs, in order. */
const CLASSES = [SMALL_CLASS, MEDIUM_CLASS, DEFAULT_LIMITS];

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
}
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mark = (ok: boolean) => (ok ? "✓" : "✗");

/** A local target: its host name (its certificate's) and port. */
interface Target {
  host: string;
  port: number;
}


/** A prover with the product's defaults (the pool size the machine allows), mapping each target to loopback. */
function defaultProver(targets: Target[], env: Record<string, string> = {}): Promise<RunningProver> {
  return startProver(SOURCE_CLI, targets[0]!.port, {
    PROVER_MAX_SENT_DATA: String(DEFAULT_LIMITS.maxSentData),
    PROVER_MAX_RECV_DATA: String(DEFAULT_LIMITS.maxRecvData),
    PROVER_POOL_SIZE: String(defaultPoolSize(MACHINE, DEFAULT_LIMITS, ENGINES)),
    PROVER_RESOLVE: targets.map((t) => `${t.host}:${t.port}:127.0.0.1`).join(","),
    ...env,
    ...BENCH_PROVER_ENV,
  });
}

async function proof(prover: RunningProver, target: Target, body: number) {
  const requestId = crypto.randomUUID();
  const event = firstEvent(`${prover.url}/proof/${requestId}`, 900_000);
  const started = performance.now();
  const response = await fetch(`${prover.url}/proxy`, {
    headers: { "T-PROXY-URL": `https://${target.host}:${target.port}/big?bytes=${body}`, "T-REQUEST-ID": requestId },
  });
  const text = await response.text();
  const responseMs = performance.now() - started;
  if (response.status === 503) return { ok: false, busy: true, status: 503, error: text, responseMs, proofMs: responseMs };
  const outcome = await event;
  const ok = response.status === 200 && outcome.event === "message";
  const error = ok ? "" : response.status !== 200 ? `/proxy ${response.status} ${codeIn(text)}` : `proof event ${codeIn(outcome.data)}`;
  return { ok, busy: false, status: response.status, error, responseMs, proofMs: performance.now() - started };
}

/** The error code in a `/proxy` error body or an `event: error`'s data; the text's start when it has none. */
function codeIn(text: string): string {
  try {
    const parsed = JSON.parse(text) as { code?: string; error?: { code?: string } };
    return parsed.error?.code ?? parsed.code ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

/** A client with requests always waiting: a 503 (the prover's session cap) is retried after its Retry-After. */
async function proofWhenAdmitted(prover: RunningProver, target: Target, body: number) {
  for (;;) {
    const r = await proof(prover, target, body);
    if (!r.busy) return r;
    await Bun.sleep(5_000);
  }
}

const poolOf = async (prover: RunningProver) =>
  (await (await fetch(`${prover.url}/pool`)).json()) as {
    ready: number;
    inUse: number;
    warming: number;
    served: { ready: number; warming: number; onDemand: number };
    memory: HostMemory;
    engineHosts: { hosts: { memory: HostMemory }[] };
  };

/**
 * Waits until the pool holds `ready` sessions and sets none up. A pool that stops short of it (the engines have no
 * room for more) ends the run with an error rather than waiting for good.
 */
async function poolFilled(prover: RunningProver, ready: number) {
  let unchangedSince = performance.now();
  let last = -1;
  for (let status = await poolOf(prover); status.ready < ready || status.warming > 0; status = await poolOf(prover)) {
    if (status.ready !== last || status.warming > 0) [last, unchangedSince] = [status.ready, performance.now()];
    if (performance.now() - unchangedSince > 60_000) throw new Error(`the pool stopped at ${status.ready} of ${ready} warm sessions (no room in the engines?)`);
    await Bun.sleep(1000);
  }
}

/**
 * Writes the prover's log to a file and returns its path: it explains failures (the engine's own words included)
 * and slow requests (its pool's refills, its queues).
 */
function keepLog(prover: RunningProver, measure: string): string {
  const path = join(tmpdir(), `bench-${measure}-${Date.now()}.log`);
  writeFileSync(path, prover.log());
  return path;
}

/** The prover process and its engine hosts together (the process itself holds no engine: /pool sums the hosts'). */
const totalMemory = (status: Awaited<ReturnType<typeof poolOf>>): HostMemory => ({
  engineBytes: status.memory.engineBytes,
  rssBytes: status.engineHosts.hosts.reduce((sum, h) => sum + h.memory.rssBytes, status.memory.rssBytes),
});

async function coldSmallGet(runs: number, target: Target) {
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const prover = await defaultProver([target]); // a fresh process: nothing learned, nothing warm
    try {
      const r = await proof(prover, target, MIX_BODIES[0]!);
      if (!r.ok) throw new Error(`cold small GET failed: ${r.status} ${r.error}`);
      times.push(r.proofMs);
    } finally {
      await prover.stop();
    }
  }
  return median(times);
}

/**
 * Proofs per minute with requests always waiting: one client per core, each sending its next request as soon as
 * its last proof arrives (a 503 retried), until `n` + 1 proofs have arrived. The rate is that of the pipeline full:
 * `n` proofs between the first proof's arrival and the last's, every client at work throughout. The whole run's
 * rate, the first request's setup and the last one's exchange run without another beside them, is returned too.
 */
async function throughput(n: number, target: Target, log: (line: string) => void) {
  const prover = await defaultProver([target]);
  try {
    // Learn the endpoint first, so the run measures steady state rather than the first repeat.
    await proof(prover, target, MIX_BODIES[0]!);
    const arrivals: number[] = [];
    const started = performance.now();
    const client = async () => {
      while (arrivals.length <= n) {
        const r = await proofWhenAdmitted(prover, target, MIX_BODIES[0]!);
        if (!r.ok) throw new Error(`throughput proof failed: ${r.status} ${r.error}`);
        arrivals.push(performance.now() - started);
        log(`throughput: proof ${arrivals.length} at ${s(arrivals.at(-1)!)}, ${s(r.proofMs)} after its /proxy call`);
      }
    };
    await Promise.all(cpus().map(client));
    const [first, last, whole] = [arrivals[0]!, arrivals[n]!, arrivals.at(-1)!];
    return { full: (n / (last - first)) * 60_000, whole: (arrivals.length / whole) * 60_000, logPath: keepLog(prover, "throughput") };
  } finally {
    await prover.stop();
  }
}

/**
 * Warm sessions per host in the mixed workload (MIX_POOL_PER_HOST, default 2): with one, a second request to a
 * host within a refill's time finds none. The default pool size, one per core, is 2 here.
 */
const MIX_POOL_PER_HOST = Number(process.env.MIX_POOL_PER_HOST ?? 2);

/**
 * Engine hosts the mix's warm sessions need, both sides of each, beside a live session of the largest class, and at
 * least the default: 3 on this machine, which is also its default.
 */
function mixEngineHosts(): number {
  const warm = CLASSES.flatMap((cls) => Array<SessionSizes>(MIX_POOL_PER_HOST).fill(cls));
  for (let hosts = 1; ; hosts++) {
    const engines = { hosts, embeddedNotary: true };
    const empty = Array.from({ length: hosts }, () => ({ reservedBytes: 0, busy: 0, retiring: false }));
    if (fitsBeside(empty, [...warm, DEFAULT_LIMITS].map((cls) => sessionCost(engines, cls)))) return Math.max(hosts, ENGINES.hosts);
  }
}

/** A small seeded generator of numbers in [0, 1) (mulberry32), so a mix can be replayed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Three hosts, each answering one of MIX_BODIES, with MIX_POOL_PER_HOST warm sessions each. One request per host
 * first, not counted, teaches the prover each endpoint's size.
 */
async function mixed(seconds: number, perMinute: number, seed: number, targets: Target[], log: (line: string) => void) {
  const random = seededRandom(seed);
  log(`mixed: seed ${seed}${Object.keys(BENCH_PROVER_ENV).length ? `, prover settings ${JSON.stringify(BENCH_PROVER_ENV)}` : ""}`);
  const prover = await defaultProver(targets, {
    PROVER_POOL_SIZE: String(targets.length * MIX_POOL_PER_HOST),
    PROVER_ENGINE_HOSTS: String(mixEngineHosts()),
  });
  try {
    for (const [i, target] of targets.entries()) {
      const r = await proof(prover, target, MIX_BODIES[i]!);
      if (!r.ok) throw new Error(`mixed warm-up failed: ${r.status} ${r.error}`);
    }
    // The clock starts in steady state: the pool holds each host's sessions, as in a prover that has been running.
    await poolFilled(prover, targets.length * MIX_POOL_PER_HOST);
    const latencies: number[] = [];
    const failed: string[] = [];
    let busy = 0;
    const before = await poolOf(prover);
    const running: Promise<void>[] = [];
    const end = performance.now() + seconds * 1000;
    const startedAt = performance.now();
    while (performance.now() < end) {
      const origin = Math.floor(random() * targets.length);
      // What the request meets: refills competing for the cores explain a slow warm request.
      const met = await poolOf(prover);
      const arrivedS = Math.round((performance.now() - startedAt) / 1000);
      running.push(
        proof(prover, targets[origin]!, MIX_BODIES[origin]!).then((r) => {
          if (r.ok) latencies.push(r.responseMs);
          else if (r.busy) busy++;
          else failed.push(r.error);
          log(
            `mixed: at ${arrivedS} s, a ${MIX_BODIES[origin]} B answer, met ${met.inUse} live and ${met.warming} warming ` +
              `(${met.ready} ready): ${r.ok ? `${(r.responseMs / 1000).toFixed(1)} s` : r.busy ? "503" : r.error}`,
          );
        }),
      );
      // Poisson arrivals: exponential gaps (cut at the end of the run).
      await Bun.sleep(Math.min((-Math.log(1 - random()) * 60_000) / perMinute, Math.max(0, end - performance.now())));
    }
    await Promise.all(running);
    const after = await poolOf(prover);
    // A request that joins a refill under way waits for the rest of its setup: counted warm, and named apart.
    const joined = after.served.warming - before.served.warming;
    const warm = after.served.ready - before.served.ready + joined;
    return { latencies, failed, busy, warm, joined, requests: running.length, logPath: keepLog(prover, "mixed") };
  } catch (error) {
    // A failed warm-up or poll ends the measure: its log says why, so it is kept too.
    log(`mixed: failed; the prover's log: ${keepLog(prover, "mixed")}`);
    throw error;
  } finally {
    await prover.stop();
  }
}

/**
 * The mix's floor: the same three hosts, each request finding its host's warm session and running alone (the
 * pool full and idle before each). No scheduling of refills can make the mixed workload faster than this.
 */
async function warmFloor(runs: number, targets: Target[]) {
  const prover = await defaultProver(targets, { PROVER_POOL_SIZE: String(targets.length) });
  try {
    for (const [i, target] of targets.entries()) await proof(prover, target, MIX_BODIES[i]!);
    const all: number[] = [];
    const perHost: number[][] = targets.map(() => []);
    for (let run = 0; run < runs; run++) {
      for (const [i, target] of targets.entries()) {
        await poolFilled(prover, targets.length);
        const before = await poolOf(prover);
        const r = await proof(prover, target, MIX_BODIES[i]!);
        if (!r.ok || (await poolOf(prover)).served.ready !== before.served.ready + 1) throw new Error(`warm floor: ${target.host} was not served warm (${r.status} ${r.error})`);
        all.push(r.responseMs);
        perHost[i]!.push(r.responseMs);
      }
    }
    return { median: median(all), p95: quantile(all, 0.95), perHost: perHost.map(median) };
  } finally {
    await prover.stop();
  }
}

/** Warm requests that arrive together, at most this many. */
const AT_ONCE = 3;

/**
 * Warm requests of the mix's 4 KB host arriving 1, 2 and 3 at once, each with a warm session of its own (the
 * pool full and idle before each round): how much requests that overlap slow each other, with the prover's
 * PROVER_CONCURRENT_EXCHANGES (set it for the bench to compare). Median and slowest /proxy latency per count.
 */
async function atOnce(runs: number, target: Target, body: number) {
  const prover = await defaultProver([target], { PROVER_POOL_SIZE: String(AT_ONCE) });
  try {
    // Teaches the host and its endpoint's size: the pool then keeps its sessions, all of the class that fits.
    const taught = await proof(prover, target, body);
    if (!taught.ok) throw new Error(`at once: the first request failed: ${taught.status} ${taught.error}`);
    const rows: { together: number; median: number; slowest: number }[] = [];
    for (let together = 1; together <= AT_ONCE; together++) {
      const latencies: number[] = [];
      for (let run = 0; run < runs; run++) {
        await poolFilled(prover, AT_ONCE);
        const before = await poolOf(prover);
        const round = await Promise.all(Array.from({ length: together }, () => proof(prover, target, body)));
        const served = (await poolOf(prover)).served.ready - before.served.ready;
        const failed = round.find((r) => !r.ok);
        if (failed || served !== together) throw new Error(`${together} at once: ${served} served warm (${failed?.status} ${failed?.error})`);
        latencies.push(...round.map((r) => r.responseMs));
      }
      rows.push({ together, median: median(latencies), slowest: Math.max(...latencies) });
    }
    return rows;
  } finally {
    await prover.stop();
  }
}

/** Engine and resident memory one ready session of each class adds, from /pool, in one prover. */
async function memoryPerClass(target: Target) {
  const prover = await startProver(SOURCE_CLI, target.port, {
    PROVER_MAX_SENT_DATA: String(DEFAULT_LIMITS.maxSentData),
    PROVER_MAX_RECV_DATA: String(DEFAULT_LIMITS.maxRecvData),
  });
  const rows: { cls: string; engineMiB: number; rssMiB: number; modelMiB: number; heldAtOnce: number }[] = [];
  try {
    for (const cls of CLASSES) {
      const name = `${cls.maxSentData}/${cls.maxRecvData}`;
      const before = await poolOf(prover);
      const prepared = await fetch(`${prover.url}/prepare`, {
        headers: { "T-PREPARE": "1", "T-PROXY-URL": `https://${target.host}:${target.port}/`, "T-SESSION-CLASS": name },
      });
      if (prepared.status !== 200) throw new Error(`prepare ${name}: ${prepared.status} ${await prepared.text()}`);
      let status = before;
      while (status.ready < before.ready + 1) {
        await Bun.sleep(500);
        status = await poolOf(prover);
      }
      rows.push({
        cls: name,
        engineMiB: Math.round((totalMemory(status).engineBytes - totalMemory(before).engineBytes) / 2 ** 20),
        modelMiB: Math.round(sessionEngineBytes(cls) / 2 ** 20),
        rssMiB: Math.round((totalMemory(status).rssBytes - totalMemory(before).rssBytes) / 2 ** 20),
        heldAtOnce: maxPoolSize(cls, DEFAULT_LIMITS, ENGINES),
      });
    }
    return rows;
  } finally {
    await prover.stop();
  }
}

/** Three hosts of their own (the pool keeps sessions per host name), each with a certificate from the test CA. */
function startMixTargets(): { targets: Target[]; stop(): void } {
  const hosts = MIX_BODIES.map((_, i) => (i === 0 ? TARGET_HOST : `mix-${i + 1}.tlsproof.test`));
  const servers: Server<undefined>[] = hosts.map((host) => startTarget(trustedIdentityFor(tlsFixture(), host)));
  return { targets: servers.map((server, i) => ({ host: hosts[i]!, port: server.port! })), stop: () => servers.forEach((server) => server.stop(true)) };
}

/** Failures counted by what they said: `: 2 × /proxy 502 target_request_failed, …`. */
function failures(errors: string[]): string {
  const counts = new Map<string, number>();
  for (const error of errors) counts.set(error, (counts.get(error) ?? 0) + 1);
  return counts.size === 0 ? "" : `: ${[...counts].map(([error, n]) => `${n} × ${error}`).join(", ")}`;
}

const TABLE_HEAD = ["| Measure | Value | Ratio | Goal |", "|---|---|---|---|"];

/** The measures, in the order they run; `--only` picks some of them. */
export const SIZED_PARTS = ["cold", "mixed", "floor", "atonce", "throughput", "memory"] as const;
export type SizedPart = (typeof SIZED_PARTS)[number];

export async function benchSized(benchBare: BenchBare, options: SizedOptions): Promise<string[]> {
  const { targets, stop } = startMixTargets();
  const [first] = targets as [Target];
  const runs = (part: SizedPart) => options.only.includes(part);
  const bare = async (sizes: SessionSizes) => median((await benchBare(options.runs, first.port, sizes)).results.map((r) => r.totalMs));
  try {
    const bareDefault = await bare(DEFAULT_LIMITS);
    options.log(`bare default-size session: ${s(bareDefault)}`);
    const bareSmall = runs("throughput") || runs("mixed") ? await bare(SMALL_CLASS) : Number.NaN;
    const bareMedium = runs("mixed") ? await bare(MEDIUM_CLASS) : Number.NaN;
    const rows = [
      `Bare sessions (medians of ${options.runs}): ${[
        `4096/16384 (the default size) ${s(bareDefault)}`,
        ...(Number.isNaN(bareMedium) ? [] : [`2048/6144 ${s(bareMedium)}`]),
        ...(Number.isNaN(bareSmall) ? [] : [`1024/1536 ${s(bareSmall)}`]),
      ].join(", ")}.`,
      "",
      ...TABLE_HEAD,
    ];
    if (runs("cold")) {
      const cold = await coldSmallGet(options.runs, first);
      const ratio = cold / bareDefault;
      rows.push(`| 1. Cold small GET (≈200 B sent, 1 KB answer), default settings, to the proof event | ${s(cold)} | / bare default ${ratio.toFixed(2)} | ≤ 0.45 ${mark(ratio <= 0.45)} |`);
    }
    if (runs("mixed")) {
      // The machine's capacity for this mix: bare sessions of the three classes one after another.
      const perMinute = 60_000 / ((bareSmall + bareMedium + bareDefault) / 3) / 2;
      const mix = await mixed(options.mixedS, perMinute, options.mixSeed, targets, options.log);
      options.log(`mixed: ${mix.latencies.length} served, ${mix.warm} warm (${mix.joined} joined a refill); the prover's log: ${mix.logPath}`);
      const [mid, p95] = [median(mix.latencies), quantile(mix.latencies, 0.95)];
      rows.push(
        `| 2. Mixed workload (3 hosts answering 1/4/12 KB, the pool full at the start, ${options.mixedS} s at ${perMinute.toFixed(2)}/min: half of what bare sessions of the three classes in turn sustain; ${MIX_POOL_PER_HOST} warm per host, ${mixEngineHosts()} engine hosts): /proxy median | ${s(mid)} | / bare default ${(mid / bareDefault).toFixed(2)} | ≤ 0.2 ${mark(mid / bareDefault <= 0.2)} |`,
        `| 2. Mixed workload: /proxy p95 | ${s(p95)} | / bare default ${(p95 / bareDefault).toFixed(2)} | ≤ 0.6 ${mark(p95 / bareDefault <= 0.6)} |`,
        `| 2. Mixed workload: served warm | ${mix.warm} of ${mix.requests} (${mix.joined} of them joined a refill under way; ${mix.busy} refused 503 at the session cap, ${mix.failed.length} failed${failures(mix.failed)}) | — | — |`,
      );
    }
    if (runs("floor")) {
      const floor = await warmFloor(options.runs, targets);
      rows.push(
        `| 2. The mix's floor: each request warm and alone (1/4/12 KB: ${floor.perHost.map(s).join(" / ")}): /proxy median, p95 | ${s(floor.median)}, ${s(floor.p95)} | / bare default ${(floor.median / bareDefault).toFixed(2)}, ${(floor.p95 / bareDefault).toFixed(2)} | the best any refill policy can reach |`,
      );
    }
    if (runs("atonce")) {
      const exchanges = BENCH_PROVER_ENV.PROVER_CONCURRENT_EXCHANGES ?? "unset: cores / threads";
      const [alone, ...overlapping] = await atOnce(options.runs, targets[1]!, MIX_BODIES[1]!);
      rows.push(
        `| 2. Warm 4 KB requests arriving together (PROVER_CONCURRENT_EXCHANGES ${exchanges}): alone | ${s(alone!.median)} | — | — |`,
        ...overlapping.map(
          (r) =>
            `| 2. ${r.together} at once: /proxy median, slowest | ${s(r.median)}, ${s(r.slowest)} | / alone ${(r.median / alone!.median).toFixed(2)}, ${(r.slowest / alone!.median).toFixed(2)} | — |`,
        ),
      );
    }
    if (runs("throughput")) {
      const rate = await throughput(options.throughputN, first, options.log);
      options.log(`throughput: the prover's log: ${rate.logPath}`);
      const [ratio, wholeRatio] = [rate.full, rate.whole].map((perMinute) => perMinute / (60_000 / bareSmall)) as [number, number];
      rows.push(
        `| 3. Sustained throughput (${options.throughputN} proofs of 1 KB answers between the first proof and the last, ${cpus().length} clients always waiting) | ${rate.full.toFixed(2)} proofs/min | / bare sessions per minute ${ratio.toFixed(3)} | ≥ 0.9 ${mark(ratio >= 0.9)} |`,
        `| 3. The whole run, from the first request (its setup alone) to the last proof (its exchange alone) | ${rate.whole.toFixed(2)} proofs/min | / bare sessions per minute ${wholeRatio.toFixed(3)} | — |`,
      );
    }
    if (runs("memory")) {
      for (const m of await memoryPerClass(first)) {
        rows.push(
          `| 4. One warm session of class ${m.cls} | engine +${m.engineMiB} MiB, prover and embedded notary sides (the model counts ${m.modelMiB}), resident +${m.rssMiB} MiB | pool ceiling in the default engines (memory model): ${m.heldAtOnce} | — |`,
        );
      }
    }
    return rows;
  } finally {
    stop();
  }
}
