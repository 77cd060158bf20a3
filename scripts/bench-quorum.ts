/**
 * What a quorum costs (`npm run bench:quorum`): three standalone `cli notary start`s with proxy mode on, a
 * `cli prover start` listing them, the local target (TLS 1.3), and a proxy-mode GET with a claim and a hidden
 * credential proven two ways, in alternating blocks of the same run:
 *   - by one notary (`T-QUORUM: 1`);
 *   - by a quorum of 2 of the 3 (`T-QUORUM: 2`): two sessions at once, each notary dialling the target itself.
 * Per way: the median /proxy answer and proof event (from the call), and CPU per proof of every process (the prover
 * and the three notaries), from /proc; then the ratios quorum ÷ one. Every proof is checked to be what was asked.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../testkit/notary.ts";
import { scratchDir, tlsFixture } from "../testkit/env.ts";
import { cpuSeconds, treeTotal } from "../testkit/process.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { openStream, proofData } from "../testkit/sse.ts";
import { startVersionedTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const BLOCKS = 10;
const PER_BLOCK = 20;
const WARMUP = 10;
const CREDENTIAL = { authorization: "Bearer bench-credential-0123456789abcdef" };
const KEY = "bench-quorum-key";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Timed {
  responseMs: number;
  proofMs: number;
}

async function proof(proverUrl: string, url: string, quorum: number): Promise<Timed> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${proverUrl}/proof/${requestId}`, 60_000);
  const started = performance.now();
  const headers = { "t-proxy-url": url, "t-request-id": requestId, "t-proof-mode": "proxy", "t-claim": "res:body:user.name", "t-quorum": String(quorum), ...CREDENTIAL };
  const response = await fetch(`${proverUrl}/proxy`, { headers });
  await response.arrayBuffer();
  const responseMs = performance.now() - started;
  const [event] = await stream.events;
  const proofMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`/proxy answered ${response.status}`);
  const made = JSON.parse(proofData(event!).proofText) as { version: string; proofs?: unknown[] };
  const expected = quorum === 1 ? "tlsproof/1" : "tlsproof-quorum/1";
  if (made.version !== expected || (quorum > 1 && made.proofs?.length !== quorum)) throw new Error(`not the proof asked: ${made.version}`);
  return { responseMs, proofMs };
}

const work = scratchDir("bench-quorum");
const target = await startVersionedTarget(tlsFixture(), "TLSv1.3");
const settings = ["host: 127.0.0.1", "port: 0", "notarization:", "  private_key_path: notary.key", ...proxyToLocalTargets([target.port])];
const notaries: KeyedNotary[] = await Promise.all([0, 1, 2].map(() => startKeyedNotary(KEY, settings)));
const keysPath = join(work, "notaries.pub");
writeFileSync(keysPath, notaries.map((n) => readFileSync(n.pubPath, "utf8")).join(""));
const prover = await startProver(SOURCE_CLI, target.port, {
  PROVER_NOTARY_URL: notaries.map((n) => n.notary.url).join(","),
  PROVER_NOTARY_API_KEY: KEY,
  PROVER_NOTARY_KEYS: keysPath,
  PROVER_ENGINE_HOSTS: "1",
  LOG_LEVEL: "warn",
});
const pids = [prover.process.pid, ...notaries.map((n) => n.notary.process.pid)];
// Each process with its children (the prover's engine hosts, idle in proxy mode).
const cpu = () => pids.reduce((sum, pid) => sum + treeTotal(pid, cpuSeconds), 0);
const url = `https://${TARGET_HOST}:${target.port}/data`;

try {
  for (let i = 0; i < WARMUP; i++) await proof(prover.url, url, 1 + (i % 2));
  const ways = { one: { quorum: 1, runs: [] as Timed[], cpuS: 0 }, quorum: { quorum: 2, runs: [] as Timed[], cpuS: 0 } };
  for (let block = 0; block < BLOCKS; block++) {
    // Alternating which goes first, so that neither always follows the other.
    for (const way of block % 2 === 0 ? [ways.one, ways.quorum] : [ways.quorum, ways.one]) {
      const before = cpu();
      for (let i = 0; i < PER_BLOCK; i++) way.runs.push(await proof(prover.url, url, way.quorum));
      way.cpuS += cpu() - before;
    }
  }
  const row = (name: string, way: typeof ways.one) => {
    const response = median(way.runs.map((r) => r.responseMs));
    const proofMs = median(way.runs.map((r) => r.proofMs));
    const cpuMs = (way.cpuS * 1000) / way.runs.length;
    console.log(`${name.padEnd(22)} answer ${response.toFixed(1)} ms, proof event ${proofMs.toFixed(1)} ms, CPU ${cpuMs.toFixed(1)} ms/proof (prover + 3 notaries)`);
    return { response, proofMs, cpuMs };
  };
  console.log(`${BLOCKS * PER_BLOCK} proofs each way, medians, in alternating blocks of ${PER_BLOCK}:`);
  const one = row("one notary", ways.one);
  const quorum = row("quorum of 2 of 3", ways.quorum);
  console.log(`quorum ÷ one: answer ${(quorum.response / one.response).toFixed(2)}, proof event ${(quorum.proofMs / one.proofMs).toFixed(2)}, CPU ${(quorum.cpuMs / one.cpuMs).toFixed(2)}`);
} finally {
  await prover.stop();
  for (const n of notaries) n.notary.process.kill("SIGTERM");
  target.stop();
}
