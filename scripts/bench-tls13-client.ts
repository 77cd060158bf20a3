/**
 * Our TLS 1.3 client against a plain HTTPS GET: `bun scripts/bench-tls13-client.ts [--runs N]` (default 200).
 * On loopback, against the local test target (Bun.serve, TLS 1.3), each run on a fresh TCP connection:
 *   1. the client's GET /data with the default-hidden Authorization in an epoch of its own (two key updates),
 *      the answer read whole, vs node:https's GET of the same URL (agent: false; Connection: close) [the /proxy
 *      goal is 3x a plain GET for the whole proof path; this is the client's share of it];
 *   2. the same with the key share P-256 offered first, and with a HelloRetryRequest to it avoided or not;
 *   3. the notary's check of one recorded exchange (the epochs, the server's records, the request rule).
 * Runs alternate between the measured kinds so that load drifts alike; medians and ratios are printed.
 */
import { request as httpsRequest } from "node:https";
import { requestParts } from "../src/http1/request-epochs.ts";
import { serializeRequest } from "../src/http1/request.ts";
import { DEFAULT_MAX_HIDDEN_REQUEST_SPAN, partlyRevealedDirection, revealedRequestProblem } from "../src/proof/request-rule.ts";
import { computeRedactions } from "../src/redaction/index.ts";
import { type KeyShareGroup, runTls13Exchange } from "../src/tls/client/exchange.ts";
import { keysOfEpochExchange, verifyRelayedSession } from "../src/tls/verify-session.ts";
import { tlsFixture } from "../testkit/env.ts";
import { recordedConnection } from "../testkit/recorded-connection.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 200;
const WARMUP = 20;
const CREDENTIAL = "Bearer bench-0123456789abcdef0123456789";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function plainGet(port: number, ca: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      { host: "127.0.0.1", port, path: "/data", servername: TARGET_HOST, ca, agent: false, headers: { host: TARGET_HOST, authorization: CREDENTIAL, connection: "close" } },
      (response) => {
        response.on("data", () => {});
        response.on("end", () => resolve(performance.now() - started));
      },
    );
    request.on("error", reject);
    request.end();
  });
}

const request = serializeRequest({ method: "GET", pathAndQuery: "/data", headers: [["host", TARGET_HOST], ["authorization", CREDENTIAL], ["connection", "close"]], body: undefined });
const parts = requestParts(request, computeRedactions({ sent: request, recv: new Uint8Array(0) }, []).hidden.sent);

async function clientGet(port: number, ca: string, keyShares: KeyShareGroup[]) {
  const started = performance.now();
  const connection = await recordedConnection(port);
  const exchange = await runTls13Exchange(connection.transport, parts, { serverName: TARGET_HOST, trustAnchorsPem: [ca], responseTimeoutMs: 10_000, maxRecvBytes: 1 << 20, keyShares });
  return { ms: performance.now() - started, exchange, relayed: connection.relayed() };
}

const tls = tlsFixture();
const target = startTarget(tls);
const port = target.port!;
const kinds = {
  plain: () => plainGet(port, tls.caPem),
  x25519: async () => (await clientGet(port, tls.caPem, ["x25519"])).ms,
  p256: async () => (await clientGet(port, tls.caPem, ["p256"])).ms,
};
const times: Record<keyof typeof kinds, number[]> = { plain: [], x25519: [], p256: [] };
for (let i = 0; i < WARMUP; i++) for (const run of Object.values(kinds)) await run();
for (let i = 0; i < runs; i++) for (const [kind, run] of Object.entries(kinds)) times[kind as keyof typeof kinds].push(await run());

const sample = await clientGet(port, tls.caPem, ["x25519"]);
if (!new TextDecoder().decode(sample.exchange.recv).startsWith("HTTP/1.1 200")) throw new Error("the target did not answer 200");
const keys = keysOfEpochExchange(sample.exchange);
const checks: number[] = [];
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  const verified = verifyRelayedSession(sample.relayed, keys, { serverName: TARGET_HOST, trustAnchorsPem: [tls.caPem], now: new Date() });
  const problem = revealedRequestProblem(partlyRevealedDirection(verified.sentPartly!), TARGET_HOST, { maxHiddenSpanBytes: DEFAULT_MAX_HIDDEN_REQUEST_SPAN });
  if (problem) throw new Error(problem);
  checks.push(performance.now() - started);
}
target.stop(true);

const ms = (x: number) => `${x.toFixed(2)} ms`;
const plain = median(times.plain);
console.log(`TLS 1.3 client, GET /data with a hidden Authorization (3 client epochs), fresh connections, medians of ${runs} after ${WARMUP} warm-up runs:`);
console.log(`  node:https GET (plain, nothing hidden) ${ms(plain)}`);
console.log(`  our client, X25519 share               ${ms(median(times.x25519))}  ratio ${(median(times.x25519) / plain).toFixed(2)}`);
console.log(`  our client, P-256 share                ${ms(median(times.p256))}  ratio ${(median(times.p256) / plain).toFixed(2)}`);
console.log(`  notary's check of one exchange (epochs, server records, request rule) ${ms(median(checks))}`);
