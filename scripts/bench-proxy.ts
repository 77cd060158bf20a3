/**
 * Proxy mode's part of `npm run bench:proof` (alone: `bun scripts/bench-proof.ts --proxy-only`): one prover
 * with its embedded notary, the local target, and
 *   1. /proxy latency of a small GET in proxy mode ÷ a plain HTTPS GET of the same URL (a fresh TLS
 *      connection each, like the prover's) [goal ≤ 3];
 *   2. the proof event after the /proxy answer [≤ 50 ms];
 *   3. sustained proxy-mode proofs per second, `PROXY_CONCURRENCY` clients each waiting for its proof [≥ 50];
 *   4. a 1 MB answer, /proxy call to the proof event [≤ 1 s].
 */
import { request as httpsRequest } from "node:https";
import { tlsFixture } from "../testkit/env.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { openStream, proofData } from "../testkit/sse.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const LATENCY_RUNS = 30;
const WARMUP_RUNS = 5;
const SUSTAINED_PROOFS = 300;
const PROXY_CONCURRENCY = 8;
const BIG_RUNS = 5;
const BIG_BYTES = 1_000_000;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** A plain HTTPS GET on a fresh connection, the answer read whole; milliseconds. */
function plainGet(port: number, path: string, ca: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      { host: "127.0.0.1", port, path, servername: TARGET_HOST, ca, agent: false, headers: { host: `${TARGET_HOST}:${port}`, connection: "close" } },
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
  responseMs: number;
  proofMs: number;
}

/** One proxy-mode proof as a client makes it: the stream opened, /proxy called, the proof event awaited. */
async function proxyProof(proverUrl: string, url: string): Promise<ProxyRun> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${proverUrl}/proof/${requestId}`, 60_000);
  const started = performance.now();
  const response = await fetch(`${proverUrl}/proxy`, { headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
  await response.arrayBuffer();
  const responseMs = performance.now() - started;
  const [event] = await stream.events;
  const proofMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`/proxy answered ${response.status}`);
  proofData(event!); // throws unless it is a proof
  return { responseMs, proofMs };
}

async function sustained(proverUrl: string, url: string): Promise<number> {
  let next = 0;
  const started = performance.now();
  const client = async () => {
    while (next < SUSTAINED_PROOFS) {
      next += 1;
      await proxyProof(proverUrl, url);
    }
  };
  await Promise.all(Array.from({ length: PROXY_CONCURRENCY }, client));
  return SUSTAINED_PROOFS / ((performance.now() - started) / 1000);
}

/** The proxy-mode rows of the benchmark table. */
export async function benchProxy(log: (line: string) => void): Promise<string[]> {
  const tls = tlsFixture();
  const target = startTarget(tls);
  const port = target.port!;
  const prover = await startProver(SOURCE_CLI, port, { PROVER_PROOF_MODE: "proxy" });
  const url = (path: string) => `https://${TARGET_HOST}:${port}${path}`;
  try {
    for (let i = 0; i < WARMUP_RUNS; i++) {
      await plainGet(port, "/data", tls.caPem);
      await proxyProof(prover.url, url("/data"));
    }
    const plain: number[] = [];
    const proxy: ProxyRun[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      plain.push(await plainGet(port, "/data", tls.caPem));
      proxy.push(await proxyProof(prover.url, url("/data")));
    }
    const plainMs = median(plain);
    const proxyMs = median(proxy.map((r) => r.responseMs));
    const eventAfterMs = median(proxy.map((r) => r.proofMs - r.responseMs));
    log(`proxy latency runs (ms): ${JSON.stringify(proxy.map((r) => Math.round(r.responseMs)))}; plain ${JSON.stringify(plain.map(Math.round))}`);
    const perSecond = await sustained(prover.url, url("/data"));
    const big: number[] = [];
    for (let i = 0; i < BIG_RUNS; i++) big.push((await proxyProof(prover.url, url(`/big?bytes=${BIG_BYTES}`))).proofMs);
    const bigMs = median(big);
    log(`1 MB runs (ms): ${JSON.stringify(big.map(Math.round))}`);
    const mark = (ok: boolean) => (ok ? "✓" : "✗");
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return [
      `| Proxy mode: /proxy latency, small GET (median of ${LATENCY_RUNS}) | ${ms(proxyMs)} (plain HTTPS GET ${ms(plainMs)}) | proxy/plain ${(proxyMs / plainMs).toFixed(2)} | ≤ 3 ${mark(proxyMs / plainMs <= 3)} |`,
      `| Proxy mode: proof event after the /proxy answer | ${ms(eventAfterMs)} | — | ≤ 50 ms ${mark(eventAfterMs <= 50)} |`,
      `| Proxy mode: sustained proofs per second (${SUSTAINED_PROOFS} proofs, ${PROXY_CONCURRENCY} clients) | ${perSecond.toFixed(0)}/s | — | ≥ 50 ${mark(perSecond >= 50)} |`,
      `| Proxy mode: 1 MB answer, /proxy call to the proof event (median of ${BIG_RUNS}) | ${ms(bigMs)} | — | ≤ 1 s ${mark(bigMs <= 1000)} |`,
    ];
  } finally {
    await prover.stop();
    target.stop(true);
  }
}
