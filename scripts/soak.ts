/**
 * Soak: bounded abuse of a real prover and a real remote notary, then a normal proof.
 *   bun scripts/soak.ts [--seconds N] (default 180)
 * Starts `cli notary start` (auth on, small connect_timeout and concurrency) and `cli prover start` using it, with
 * the local TLS target of testkit/. After a first proof, for N seconds: idle proof subscribers up to
 * PROVER_SSE_TOTAL and beyond, /proxy bodies slower than PROVER_IDLE_TIMEOUT, POST /session floods on the notary
 * with and without a key, slow and stalled SSE readers of a store stream larger than socket buffers hold, up to
 * PROVER_STORE_STREAMS and beyond. Then it stops the abuse, makes and verifies a proof, and prints the figures with a pass/fail per bound (exit 1 on a failure).
 * test/hardening/soak.e2e.test.ts runs the same `runSoak` with a short duration.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fdKinds, openFds, processTree, socketKinds } from "../testkit/process.ts";
import { proveData, verifyWithCli } from "../testkit/prove.ts";
import { eventually, notarySessions } from "../testkit/notary.ts";
import { type AbuseCounts, emptyCounts, fillStoreStream, runAbuse, SLOW_BODY_CLIENTS } from "./soak/abuse.ts";
import { type Bound, MiB, type Sample, formatBounds, mib, proverFds, sampleUntil, takeSample } from "./soak/figures.ts";
import { SOAK_LIMITS, type SoakServers, startSoakServers } from "./soak/servers.ts";

/** Stated bounds. The prover's figures include its engine hosts, where its MPC sessions run. */
export const SOAK_BOUNDS = { proverRss: 1536 * MiB, notaryRss: 1024 * MiB, fdSlack: 16, sessionsSettleSlackS: 10 };

export interface ProofCheck {
  valid: boolean;
  seconds: number;
  detail: string;
}

export interface SoakReport {
  seconds: number;
  baseline: Sample;
  samples: Sample[];
  /** After the abuse, once its sockets were given back (or 30 s passed): what the proof starts from. */
  beforeProof: Sample;
  end: Sample;
  /** The prover's and its engine hosts' descriptors at baseline and at the end, by kind: where an fd bound failed. */
  proverFdsAtBaseline: string;
  proverFdsAtEnd: string;
  counts: AbuseCounts;
  sessionsAfterAbuse: number;
  proof: ProofCheck;
  bounds: Bound[];
  ok: boolean;
}

/** One ordinary proof through /proxy (real MPC with the remote notary), checked by `cli verify`. */
export async function proveOnce(servers: SoakServers): Promise<ProofCheck> {
  const started = performance.now();
  const proved = await proveData(servers.prover.url, servers.target.port!, 300_000);
  if (!proved.proof) return { valid: false, seconds: 0, detail: `/proxy answered ${proved.status}: ${proved.answer}` };
  const seconds = (performance.now() - started) / 1000;
  const verified = await verifyWithCli(proved.proof.proofText, servers.notaryPubPath);
  const valid = verified.exitCode === 0 && (JSON.parse(verified.stdout) as { valid: boolean }).valid;
  return { valid, seconds, detail: valid ? "cli verify: valid" : `cli verify exit ${verified.exitCode}: ${verified.stderr}` };
}

/**
 * Each process of the prover's tree with its descriptors by kind, and its sockets by state and port, e.g.
 * `1234: socket 14, pipe 2 [tcp ESTABLISHED in :8080 3, unix 4]; 1240: …`.
 */
function describeFds(pid: number): string {
  const list = (counts: Record<string, number>) => Object.entries(counts).map(([kind, n]) => `${kind} ${n}`).join(", ");
  const kinds = (member: number) => {
    try {
      return `${list(fdKinds(member))} [${list(socketKinds(member))}]`;
    } catch {
      return "ended";
    }
  };
  return processTree(pid).map((member) => `${member}: ${kinds(member)}`).join("; ");
}

/** The prover's descriptors after the proof; a failure also lists them by process and kind. */
function proverFdsBound(report: Omit<SoakReport, "bounds" | "ok">, peak: number): Bound {
  const { baseline, beforeProof, end, proverFdsAtBaseline, proverFdsAtEnd } = report;
  const ok = end.proverFds <= baseline.proverFds + SOAK_BOUNDS.fdSlack;
  const value = `${baseline.proverFds}/${peak}/${beforeProof.proverFds}/${end.proverFds}`;
  return {
    figure: "prover fds: baseline/peak/before proof/end",
    value: ok ? value : `${value} (baseline ${proverFdsAtBaseline}; end ${proverFdsAtEnd})`,
    bound: `end <= ${baseline.proverFds + SOAK_BOUNDS.fdSlack}`,
    ok,
  };
}

function boundsOf(report: Omit<SoakReport, "bounds" | "ok">): Bound[] {
  const { baseline, samples, beforeProof, end, counts, proof } = report;
  const peak = (pick: (s: Sample) => number) => Math.max(...[baseline, ...samples, beforeProof, end].map(pick));
  const unauthenticated = counts.sessionsUnauthenticated401 + counts.sessionsUnauthenticatedOther;
  return [
    { figure: "subscribers beyond the cap: 503", value: `${counts.subscribersRefused503} (${counts.subscribersOpened} opened)`, bound: "> 0", ok: counts.subscribersRefused503 > 0 },
    { figure: "subscribers held at once, peak", value: String(counts.subscribersHeldPeak), bound: `<= ${SOAK_LIMITS.sseTotal}`, ok: counts.subscribersHeldPeak <= SOAK_LIMITS.sseTotal },
    { figure: "slow /proxy bodies dropped", value: String(counts.slowBodiesClosedByServer), bound: `>= ${SLOW_BODY_CLIENTS}`, ok: counts.slowBodiesClosedByServer >= SLOW_BODY_CLIENTS },
    { figure: "POST /session without key: 401", value: `${counts.sessionsUnauthenticated401}/${unauthenticated}`, bound: "all", ok: unauthenticated > 0 && counts.sessionsUnauthenticatedOther === 0 },
    { figure: "POST /session with key: created/503", value: `${counts.sessionsCreated}/${counts.sessionsRefused503}`, bound: "both > 0", ok: counts.sessionsCreated > 0 && counts.sessionsRefused503 > 0 },
    { figure: "notary sessions, peak", value: String(peak((s) => s.notarySessions)), bound: `<= ${SOAK_LIMITS.notaryConcurrency}`, ok: peak((s) => s.notarySessions) <= SOAK_LIMITS.notaryConcurrency },
    { figure: "notary sessions after abuse", value: String(report.sessionsAfterAbuse), bound: `0 within ${SOAK_LIMITS.notaryConnectTimeoutS + SOAK_BOUNDS.sessionsSettleSlackS} s`, ok: report.sessionsAfterAbuse === 0 },
    { figure: "store streams beyond the cap: 503", value: `${counts.storeStreamsRefused503} (${counts.storeStreamsOpened} opened)`, bound: "> 0", ok: counts.storeStreamsRefused503 > 0 },
    { figure: "stalled store streams dropped", value: String(counts.storeStreamsDroppedIdle), bound: "> 0", ok: counts.storeStreamsDroppedIdle > 0 },
    { figure: "prover RSS, peak", value: mib(peak((s) => s.proverRss)), bound: `<= ${mib(SOAK_BOUNDS.proverRss)}`, ok: peak((s) => s.proverRss) <= SOAK_BOUNDS.proverRss },
    { figure: "notary RSS, peak", value: mib(peak((s) => s.notaryRss)), bound: `<= ${mib(SOAK_BOUNDS.notaryRss)}`, ok: peak((s) => s.notaryRss) <= SOAK_BOUNDS.notaryRss },
    proverFdsBound(report, peak((s) => s.proverFds)),
    { figure: "notary fds: baseline/peak/before proof/end", value: `${baseline.notaryFds}/${peak((s) => s.notaryFds)}/${beforeProof.notaryFds}/${end.notaryFds}`, bound: `end <= ${baseline.notaryFds + SOAK_BOUNDS.fdSlack}`, ok: end.notaryFds <= baseline.notaryFds + SOAK_BOUNDS.fdSlack },
    { figure: "proof after abuse", value: proof.valid ? `${proof.seconds.toFixed(1)} s` : `failed: ${proof.detail}`, bound: "verifies", ok: proof.valid },
  ];
}

/**
 * Starts the servers, abuses them for `seconds`, then checks that they recovered and still prove; stops them.
 * With `keepLogsIn`, the servers' logs are written there.
 */
export async function runSoak(seconds: number, progress: (line: string) => void = () => {}, keepLogsIn?: string): Promise<SoakReport> {
  const servers = await startSoakServers();
  try {
    progress(`prover ${servers.prover.url}, notary ${servers.notary.url}; filling the store stream`);
    await fillStoreStream(servers);
    // The baseline is a prover that has proven once: the first MPC proof starts its engine hosts, which then stay.
    progress("a first proof");
    const first = await proveOnce(servers);
    if (!first.valid) throw new Error(`the first proof, before the abuse, failed: ${first.detail}`);
    await eventually(() => notarySessions(servers.notary.url), (n) => n === 0, 30_000);
    const startedAt = Date.now();
    const baseline = await takeSample(servers, startedAt);
    const proverFdsAtBaseline = describeFds(servers.prover.process.pid);
    const counts = emptyCounts();
    const samples: Sample[] = [];
    const stop = AbortSignal.timeout(seconds * 1000);
    progress(`abuse for ${seconds} s`);
    await Promise.all([runAbuse(servers, counts, stop), sampleUntil(servers, startedAt, 3_000, stop, samples)]);
    progress(`abuse stopped: ${JSON.stringify(counts)}`);
    const settleMs = (SOAK_LIMITS.notaryConnectTimeoutS + SOAK_BOUNDS.sessionsSettleSlackS) * 1000;
    const sessionsAfterAbuse = await eventually(() => notarySessions(servers.notary.url), (n) => n === 0, settleMs);
    // Closed sockets leave the servers' fd tables once the servers notice; wait for that state, then prove.
    const fdsBack = (count: () => number, base: number) => eventually(count, (n) => n <= base + SOAK_BOUNDS.fdSlack, 30_000);
    const bothFdsBack = () =>
      Promise.all([fdsBack(() => proverFds(servers.prover.process.pid), baseline.proverFds), fdsBack(() => openFds(servers.notary.process.pid), baseline.notaryFds)]);
    await bothFdsBack();
    const beforeProof = await takeSample(servers, startedAt);
    progress("proving");
    const proof = await proveOnce(servers);
    // The proof's own sockets close once the attestation is answered: the end sample waits for them too.
    await bothFdsBack();
    const end = await takeSample(servers, startedAt);
    const proverFdsAtEnd = describeFds(servers.prover.process.pid);
    const partial = { seconds, baseline, samples, beforeProof, end, proverFdsAtBaseline, proverFdsAtEnd, counts, sessionsAfterAbuse, proof };
    const bounds = boundsOf(partial);
    return { ...partial, bounds, ok: bounds.every((b) => b.ok) };
  } finally {
    await servers.stop();
    if (keepLogsIn) progress(`logs kept: ${keepLogs(servers, keepLogsIn).join(", ")}`);
  }
}

/** Writes the notary's and the prover's logs to files: why each session ended is told there, not in the figures. */
function keepLogs(servers: SoakServers, folder: string): string[] {
  const stamp = Date.now();
  return [["notary", servers.notary.log()], ["prover", servers.prover.log()]].map(([role, text]) => {
    const path = join(folder, `soak-${role}-${stamp}.log`);
    writeFileSync(path, text!);
    return path;
  });
}

if (import.meta.main) {
  const index = process.argv.indexOf("--seconds");
  const seconds = index >= 0 ? Number(process.argv[index + 1]) : 180;
  if (!Number.isInteger(seconds) || seconds < 10) {
    console.error("--seconds must be a whole number of at least 10");
    process.exit(2);
  }
  const report = await runSoak(seconds, (line) => console.error(line), tmpdir());
  console.log(`soak: ${seconds} s of abuse, then one proof`);
  console.log(formatBounds(report.bounds));
  console.log(`prover descriptors at baseline: ${report.proverFdsAtBaseline}`);
  console.log(`prover descriptors at the end: ${report.proverFdsAtEnd}`);
  process.exit(report.ok ? 0 : 1);
}
