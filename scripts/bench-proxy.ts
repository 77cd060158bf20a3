/**
 * Proxy mode's part of `npm run bench:proof` (alone: `bun scripts/bench-proof.ts --proxy-only [--soak N]`): one
 * prover with its embedded notary, the local target (TLS 1.3), and, against issue 50's aims:
 *   1. /proxy latency of a small GET with a hidden credential (Authorization: the request written in epochs, a key
 *      update before and after it) ÷ a plain HTTPS GET of the same URL with the same header (a fresh TLS connection
 *      each, like the prover's), alternated in one run [≤ 1.5];
 *   2. the proof event after the /proxy answer [≤ 5 ms];
 *   1 and 2 are measured twice: on a fresh prover (after WARMUP_RUNS calls), and warm, after the sustained proofs of 3
 *   (a fresh process runs its first calls in code the JIT has not compiled yet: about twice the warm time);
 *   3. sustained proxy-mode proofs per second of that GET, `PROXY_CONCURRENCY` clients each waiting for its proof
 *      and verifying it with the notary's pinned key [≥ 250 on two cores];
 *   4. the prover's CPU per sustained proof (its embedded notary included) ÷ a plain GET's client CPU, the GETs made
 *      by a process of their own so that the target's share is in neither [≤ 2];
 *   5. a 1 MB answer, /proxy call to the proof event [≤ 100 ms];
 *   6. TLS 1.2-only targets: the first /proxy (our TLS 1.3 hello refused, then a new relay over node:tls)
 *      ÷ the next (the target remembered: node:tls at once), and ÷ /proxy to a TLS 1.3 target behind the same front;
 *   7. with `--soak N`: N proofs at the sustained rate, each verified, each delivered once to its subscriber (the
 *      stream holds one event), each in the store (its outcome read back), and the prover's resident memory after
 *      every thousand: flat after the first thousand [its least-squares line grows ≤ 10% over the soak];
 *   8. with `--soak-notary N` (benchProxyRemoteSoak): the same soak against a standalone `cli notary start`, the
 *      prover's memory and the notary's each judged so.
 * `PROVER_*` settings given to the bench reach its provers (`PROVER_PROOF_RETENTION=5s`: the soak without the
 * outcomes kept in memory for late subscribers).
 */
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { verifyProof } from "../src/client/verify.ts";
import { tlsFixture } from "../testkit/env.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { openStream, proofData } from "../testkit/sse.ts";
import { startTarget, startVersionedTarget } from "../testkit/target.ts";
import { proxyToLocalTargets, startKeyedNotary } from "../testkit/notary.ts";
import { BENCH_PROVER_ENV } from "./bench-env.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const LATENCY_RUNS = 30;
const WARMUP_RUNS = 5;
const SUSTAINED_PROOFS = 3_000;
/** Plain GETs the CPU measure's own process makes (after as many to warm up). */
const PLAIN_CPU_GETS = 300;
const PROXY_CONCURRENCY = 8;
const BIG_RUNS = 11;
/** 1 MB proofs made first and not counted: the first of a process takes two to three times the next (its code still cold). */
const BIG_WARMUP_RUNS = 2;
const BIG_BYTES = 1_000_000;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The credential every GET carries: hidden by default, so /proxy writes it in an epoch of its own. */
const CREDENTIAL = { authorization: "Bearer bench-credential-0123456789abcdef" };

/** A plain HTTPS GET on a fresh connection, the answer read whole; milliseconds. */
function plainGet(port: number, path: string, ca: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      { host: "127.0.0.1", port, path, servername: TARGET_HOST, ca, agent: false, headers: { host: `${TARGET_HOST}:${port}`, connection: "close", ...CREDENTIAL } },
      (response) => {
        response.on("data", () => {});
        response.on("end", () => resolve(performance.now() - started));
      },
    );
    request.on("error", reject);
    request.end();
  });
}

interface ProxyRun {
  requestId: string;
  responseMs: number;
  proofMs: number;
  /** Events on the proof stream: 1 when the proof was delivered once. */
  events: number;
}

/**
 * One proxy-mode proof as a client makes it: the stream opened, /proxy called, the proof event awaited, and with
 * `pinnedKey` the proof verified as a client would (the test CA stands in for a public root here).
 */
async function proxyProof(proverUrl: string, url: string, pinnedKey?: string): Promise<ProxyRun> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${proverUrl}/proof/${requestId}`, 60_000);
  const started = performance.now();
  const response = await fetch(`${proverUrl}/proxy`, { headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy", ...CREDENTIAL } });
  await response.arrayBuffer();
  const responseMs = performance.now() - started;
  const events = await stream.events;
  const proofMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`/proxy answered ${response.status}`);
  // Throws unless it is a proof; the request must be in it (TLS 1.3) or hidden whole (TLS 1.2), the credential never.
  const { proofText } = proofData(events[0]!);
  if (proofText.includes(CREDENTIAL.authorization.slice(7))) throw new Error("the proof holds the credential");
  if (pinnedKey) verifyProof(proofText, pinnedKey, { url, allowTestTrustAnchor: true });
  return { requestId, responseMs, proofMs, events: events.length };
}

/** Median /proxy latency and plain GET of `path` on `port`, alternating, after a warm-up; milliseconds. */
async function latencies(proverUrl: string, port: number, path: string, ca: string): Promise<{ plain: number[]; proxy: ProxyRun[] }> {
  const url = `https://${TARGET_HOST}:${port}${path}`;
  for (let i = 0; i < WARMUP_RUNS; i++) {
    await plainGet(port, path, ca);
    await proxyProof(proverUrl, url);
  }
  const plain: number[] = [];
  const proxy: ProxyRun[] = [];
  for (let i = 0; i < LATENCY_RUNS; i++) {
    plain.push(await plainGet(port, path, ca));
    proxy.push(await proxyProof(proverUrl, url));
  }
  return { plain, proxy };
}

/** CPU time a process has used so far, user and system, in milliseconds (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command's closing parenthesis.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident memory of a process (Linux /proc), in MiB. */
function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/** `count` proofs by PROXY_CONCURRENCY clients, each verified; `each` hears every run as it ends. */
async function sustained(proverUrl: string, url: string, pinnedKey: string, count: number, each: (run: ProxyRun, done: number) => void = () => {}): Promise<number> {
  let next = 0;
  let done = 0;
  const started = performance.now();
  const client = async () => {
    while (next < count) {
      next += 1;
      each(await proxyProof(proverUrl, url, pinnedKey), ++done);
    }
  };
  await Promise.all(Array.from({ length: PROXY_CONCURRENCY }, client));
  return count / ((performance.now() - started) / 1000);
}

/**
 * The client CPU of a plain HTTPS GET, in milliseconds: made by a process of its own (the target runs in this one),
 * PLAIN_CPU_GETS after as many to warm up, one after another on fresh connections as the prover makes them.
 */
async function plainGetCpuMs(port: number, path: string, ca: string): Promise<number> {
  const child = Bun.spawn([process.execPath, import.meta.path, PLAIN_CPU_FLAG, String(port), path], { stdin: new Blob([ca]), stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  if (code !== 0) throw new Error(`the plain GET process exited ${code}`);
  return Number(text.trim());
}

/** Run as `bun scripts/bench-proxy.ts --plain-cpu PORT PATH` (the test CA on stdin): plainGetCpuMs's own process. */
const PLAIN_CPU_FLAG = "--plain-cpu";
if (import.meta.main && process.argv[2] === PLAIN_CPU_FLAG) {
  const [port, path] = [Number(process.argv[3]), process.argv[4]!];
  const ca = await Bun.stdin.text();
  for (let i = 0; i < PLAIN_CPU_GETS; i++) await plainGet(port, path, ca);
  const before = process.cpuUsage();
  for (let i = 0; i < PLAIN_CPU_GETS; i++) await plainGet(port, path, ca);
  const used = process.cpuUsage(before);
  console.log(String((used.user + used.system) / 1000 / PLAIN_CPU_GETS));
}

interface SoakResult {
  proofs: number;
  delivered: number;
  deliveredTwice: number;
  stored: number;
  perSecond: number;
  /** Each sampled process's resident memory after every thousand proofs, by its name. */
  rssMiB: Record<string, number[]>;
}

/**
 * How much a series of samples grows from its first to its last by its least-squares line, as a share of the line's
 * first value: the collector's steps of 10-30 MiB between two samples move a one-sample ratio (last ÷ first) by
 * a tenth either way, a line through all of them much less.
 */
function trendGrowth(samples: number[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const meanX = (n - 1) / 2;
  const meanY = samples.reduce((sum, y) => sum + y, 0) / n;
  let covariance = 0;
  let variance = 0;
  samples.forEach((y, x) => {
    covariance += (x - meanX) * (y - meanY);
    variance += (x - meanX) ** 2;
  });
  const slope = covariance / variance;
  return (slope * (n - 1)) / (meanY - slope * meanX);
}

/**
 * `count` proofs at the sustained rate: each delivered once, each in the store, and the memory of each process of
 * `pids` (by name) after every thousand.
 */
async function soak(proverUrl: string, url: string, pinnedKey: string, pids: Record<string, number>, count: number, log: (line: string) => void): Promise<SoakResult> {
  const ids: string[] = [];
  const rss: Record<string, number[]> = Object.fromEntries(Object.keys(pids).map((name) => [name, []]));
  let delivered = 0;
  let deliveredTwice = 0;
  const perSecond = await sustained(proverUrl, url, pinnedKey, count, (run, done) => {
    ids.push(run.requestId);
    if (run.events >= 1) delivered += 1;
    if (run.events > 1) deliveredTwice += 1;
    if (done % 1000 === 0) {
      const now = Object.entries(pids).map(([name, pid]) => {
        rss[name]!.push(rssMiB(pid));
        return `${name} RSS ${rss[name]!.at(-1)!.toFixed(0)} MiB`;
      });
      log(`soak: ${done} proofs, ${now.join(", ")}`);
    }
  });
  let stored = 0;
  for (const id of ids) {
    const outcome = (await (await fetch(`${proverUrl}/proof/${id}/outcome`)).json()) as { state: string };
    if (outcome.state === "proof") stored += 1;
  }
  return { proofs: count, delivered, deliveredTwice, stored, perSecond, rssMiB: rss };
}

/** TLS 1.2-only targets, each called twice: first unknown, then remembered. */
const TLS12_TARGETS = 15;

/**
 * The TLS 1.2 row: the first /proxy to a TLS 1.2-only target (our TLS 1.3 hello refused, then node:tls on a second
 * relay) against the next one (remembered: node:tls at once), and /proxy to a TLS 1.3 target behind the same kind of
 * node:tls front (testkit/target.ts), with a plain HTTPS GET of it.
 */
async function tls12Row(log: (line: string) => void): Promise<string> {
  const tls = tlsFixture();
  const tls12 = await Promise.all(Array.from({ length: TLS12_TARGETS }, () => startVersionedTarget(tls, "TLSv1.2")));
  const tls13 = await startVersionedTarget(tls, "TLSv1.3");
  const resolve = [...tls12, tls13].map((target) => `${TARGET_HOST}:${target.port}:127.0.0.1`).join(",");
  const prover = await startProver(SOURCE_CLI, tls13.port, { PROVER_PROOF_MODE: "proxy", PROVER_RESOLVE: resolve });
  try {
    const first: number[] = [];
    const remembered: number[] = [];
    for (const target of tls12) {
      const url = `https://${TARGET_HOST}:${target.port}/data`;
      first.push((await proxyProof(prover.url, url)).responseMs);
      remembered.push((await proxyProof(prover.url, url)).responseMs);
    }
    const current = await latencies(prover.url, tls13.port, "/data", tls.caPem);
    const [firstMs, rememberedMs, newMs, plainMs] = [median(first), median(remembered), median(current.proxy.map((r) => r.responseMs)), median(current.plain)];
    log(`TLS 1.2 first /proxy runs (ms): ${JSON.stringify(first.map(Math.round))}; remembered ${JSON.stringify(remembered.map(Math.round))}`);
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return `| Proxy mode, TLS 1.2-only target: first /proxy (hello refused, a second relay) · remembered (node:tls at once) | ${ms(firstMs)} · ${ms(rememberedMs)} (/proxy to a TLS 1.3 target ${ms(newMs)}, its plain HTTPS GET ${ms(plainMs)}) | first/remembered ${(firstMs / rememberedMs).toFixed(2)}, remembered/TLS 1.3 ${(rememberedMs / newMs).toFixed(2)} | — |`;
  } finally {
    await prover.stop();
    for (const target of [...tls12, tls13]) target.stop();
  }
}

const mark = (ok: boolean) => (ok ? "✓" : "✗");

/** A soak's rows: delivered and stored, then each sampled process's memory (`names`: its row's words) and its trend. */
function soakRows(result: SoakResult, names: Record<string, string>): string[] {
  const whole = result.delivered === result.proofs && result.deliveredTwice === 0 && result.stored === result.proofs;
  return [
    `| Proxy mode: soak of ${result.proofs} proofs (${PROXY_CONCURRENCY} clients, each verified): delivered once · in the store | ${result.delivered - result.deliveredTwice} · ${result.stored} of ${result.proofs} (${result.perSecond.toFixed(0)}/s) | — | all ${mark(whole)} |`,
    ...Object.entries(names).map(([name, words]) => {
      const series = result.rssMiB[name] ?? [];
      const [first = 0, last = 0] = [series[0], series.at(-1)];
      const growth = trendGrowth(series);
      return `| Proxy mode: soak, ${words} after each thousand proofs | ${series.map((mib) => mib.toFixed(0)).join(" · ")} MiB | growth along the least-squares line ${(growth * 100).toFixed(0)}% (last/first ${(last / first).toFixed(2)}) | flat: the line's growth ≤ 10% ${mark(growth <= 0.1)} |`;
    }),
  ];
}

/** The API key the soak's prover gives its standalone notary (auth on, as a deployed notary has it). */
const SOAK_NOTARY_KEY = "bench-soak-prover-key";

/**
 * The soak against a standalone `cli notary start` (proxy mode on, auth on, its key pinned by the prover): the
 * memory of the prover and of the notary, each in its own process, after every thousand proofs.
 */
export async function benchProxyRemoteSoak(log: (line: string) => void, soakProofs: number): Promise<string[]> {
  const tls = tlsFixture();
  const target = startTarget(tls);
  const port = target.port!;
  const { notary, pubPath } = await startKeyedNotary(SOAK_NOTARY_KEY, ["host: 127.0.0.1", "port: 0", "notarization:", "  private_key_path: notary.key", ...proxyToLocalTargets([port])]);
  try {
    const prover = await startProver(SOURCE_CLI, port, {
      PROVER_PROOF_MODE: "proxy",
      PROVER_NOTARY_URL: notary.url,
      PROVER_NOTARY_API_KEY: SOAK_NOTARY_KEY,
      PROVER_NOTARY_KEYS: pubPath,
      ...BENCH_PROVER_ENV,
    });
    try {
      const result = await soak(prover.url, `https://${TARGET_HOST}:${port}/data`, readFileSync(pubPath, "utf8"), { prover: prover.process.pid, notary: notary.process.pid }, soakProofs, log);
      return soakRows(result, { prover: "prover RSS (a standalone notary)", notary: "the standalone notary's RSS" });
    } finally {
      await prover.stop();
    }
  } finally {
    notary.process.kill("SIGTERM");
    await notary.process.exited;
    target.stop(true);
  }
}

/** The proxy-mode rows of the benchmark table. */
export async function benchProxy(log: (line: string) => void, soakProofs = 0): Promise<string[]> {
  const tls = tlsFixture();
  const target = startTarget(tls);
  const port = target.port!;
  const prover = await startProver(SOURCE_CLI, port, { PROVER_PROOF_MODE: "proxy", ...BENCH_PROVER_ENV });
  const url = (path: string) => `https://${TARGET_HOST}:${port}${path}`;
  const rows: string[] = [];
  try {
    const { plain, proxy } = await latencies(prover.url, port, "/data", tls.caPem);
    const plainMs = median(plain);
    const proxyMs = median(proxy.map((r) => r.responseMs));
    const eventAfterMs = median(proxy.map((r) => r.proofMs - r.responseMs));
    log(`proxy latency runs (ms): ${JSON.stringify(proxy.map((r) => Math.round(r.responseMs)))}; plain ${JSON.stringify(plain.map(Math.round))}`);
    log(`proof event after the answer (ms): ${JSON.stringify(proxy.map((r) => Math.round(r.proofMs - r.responseMs)))}`);
    const cpuBefore = cpuMs(prover.process.pid);
    const perSecond = await sustained(prover.url, url("/data"), prover.notaryPubPem, SUSTAINED_PROOFS);
    // The prover's own CPU per proof (its embedded notary included): what bounds proofs per second when the machine is shared.
    const cpuPerProof = (cpuMs(prover.process.pid) - cpuBefore) / SUSTAINED_PROOFS;
    const plainCpu = await plainGetCpuMs(port, "/data", tls.caPem);
    // The same measure again on the prover now warm (its code compiled by the sustained proofs).
    const warm = await latencies(prover.url, port, "/data", tls.caPem);
    const [warmPlainMs, warmProxyMs, warmEventAfterMs] = [median(warm.plain), median(warm.proxy.map((r) => r.responseMs)), median(warm.proxy.map((r) => r.proofMs - r.responseMs))];
    log(`warm proxy latency runs (ms): ${JSON.stringify(warm.proxy.map((r) => Math.round(r.responseMs)))}; plain ${JSON.stringify(warm.plain.map(Math.round))}`);
    const big: number[] = [];
    for (let i = 0; i < BIG_WARMUP_RUNS; i++) await proxyProof(prover.url, url(`/big?bytes=${BIG_BYTES}`));
    for (let i = 0; i < BIG_RUNS; i++) big.push((await proxyProof(prover.url, url(`/big?bytes=${BIG_BYTES}`))).proofMs);
    const bigMs = median(big);
    log(`1 MB runs (ms): ${JSON.stringify(big.map(Math.round))}`);
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    rows.push(
      `| Proxy mode: /proxy latency, small GET with a hidden credential, fresh prover (median of ${LATENCY_RUNS} after ${WARMUP_RUNS}) | ${ms(proxyMs)} (plain HTTPS GET ${ms(plainMs)}) | proxy/plain ${(proxyMs / plainMs).toFixed(2)} | ≤ 1.5 ${mark(proxyMs / plainMs <= 1.5)} |`,
      `| Proxy mode: proof event after the /proxy answer, fresh prover | ${ms(eventAfterMs)} | — | ≤ 5 ms ${mark(eventAfterMs <= 5)} |`,
      `| Proxy mode: /proxy latency, the same, warm prover (after the sustained proofs) | ${ms(warmProxyMs)} (plain HTTPS GET ${ms(warmPlainMs)}) | proxy/plain ${(warmProxyMs / warmPlainMs).toFixed(2)} | ≤ 1.5 ${mark(warmProxyMs / warmPlainMs <= 1.5)} |`,
      `| Proxy mode: proof event after the /proxy answer, warm prover | ${ms(warmEventAfterMs)} | — | ≤ 5 ms ${mark(warmEventAfterMs <= 5)} |`,
      `| Proxy mode: sustained proofs per second (${SUSTAINED_PROOFS} proofs, ${PROXY_CONCURRENCY} clients, each verified) | ${perSecond.toFixed(0)}/s | — | ≥ 250 ${mark(perSecond >= 250)} |`,
      `| Proxy mode: the prover's CPU per sustained proof (its embedded notary included) / a plain GET's client CPU | ${cpuPerProof.toFixed(1)} ms / ${plainCpu.toFixed(2)} ms | ${(cpuPerProof / plainCpu).toFixed(2)} (two cores ÷ the proof's: ${(2000 / cpuPerProof).toFixed(0)}/s) | ≤ 2 ${mark(cpuPerProof / plainCpu <= 2)} |`,
      `| Proxy mode: 1 MB answer, /proxy call to the proof event (median of ${BIG_RUNS}, after ${BIG_WARMUP_RUNS} not counted) | ${ms(bigMs)} | — | ≤ 100 ms ${mark(bigMs <= 100)} |`,
    );
    if (soakProofs > 0) {
      const result = await soak(prover.url, url("/data"), prover.notaryPubPem, { prover: prover.process.pid }, soakProofs, log);
      rows.push(...soakRows(result, { prover: "prover RSS (embedded notary)" }));
    }
  } finally {
    await prover.stop();
    target.stop(true);
  }
  rows.push(await tls12Row(log));
  return rows;
}
