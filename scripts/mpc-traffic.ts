/**
 * What one MPC session sends between prover and notary: the largest WebSocket message and the bytes in each
 * direction, during setup and in all, through a relay in front of the notary's /notarize socket (a real local
 * TLS target, one GET, everything revealed).
 *   bun scripts/mpc-traffic.ts <maxSentData> <maxRecvData>
 * The numbers feed the socket limits in src/notary/limits.ts.
 */
import type { ServerWebSocket } from "bun";
import { startLoopbackBridge } from "../src/engine/bridge.ts";
import { localProvers } from "../src/engine/prover.ts";
import { setupProverSession } from "../src/engine/session.ts";
import { startEngine } from "../src/engine/wasm.ts";
import { createLogger } from "../src/log.ts";
import { startNotaryServer } from "../src/notary/server.ts";
import { generateKey } from "../src/proof/keys.ts";
import { createNotaryClient } from "../src/prover/notary-client.ts";
import { getFromTarget, revealAll } from "../test/support/engine-exchange.ts";
import { tlsFixture } from "../test/support/env.ts";
import { startTarget } from "../test/support/target.ts";
import { TARGET_HOST } from "../test/support/tls-fixture.ts";
import { localVerifiers } from "../src/engine/verifier.ts";

const [maxSentData, maxRecvData] = process.argv.slice(2).map(Number);
if (!maxSentData || !maxRecvData) throw new Error("usage: bun scripts/mpc-traffic.ts <maxSentData> <maxRecvData>");
const sizes = { maxSentData, maxRecvData };

const tls = tlsFixture();
await startEngine({ threads: 2, testTrustAnchorPem: tls.caPem });
const notary = startNotaryServer({
  verifiers: localVerifiers,
  host: "127.0.0.1",
  port: 0,
  sessions: { concurrency: 1, ...sizes, timeoutMs: 600_000, connectTimeoutMs: 30_000 },
  key: generateKey("secp256k1"),
  testTrustAnchor: true,
  log: createLogger({ level: "warn" }),
});
const target = startTarget(tls);

interface Direction {
  largestMessage: number;
  bytes: number;
  messages: number;
}
const toNotary: Direction = { largestMessage: 0, bytes: 0, messages: 0 };
const toProver: Direction = { largestMessage: 0, bytes: 0, messages: 0 };
const count = (direction: Direction, size: number) => {
  direction.largestMessage = Math.max(direction.largestMessage, size);
  direction.bytes += size;
  direction.messages += 1;
};

interface RelayData {
  upstreamUrl: string;
  upstream?: WebSocket;
  queue: Uint8Array[];
}
const unlimited = 1024 * 1024 * 1024;
const relay = Bun.serve<RelayData>({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch(request, server) {
    const { pathname, search } = new URL(request.url);
    const upstreamUrl = `${notary.url.replace(/^http/, "ws")}${pathname}${search}`;
    return server.upgrade(request, { data: { upstreamUrl, queue: [] } }) ? undefined : new Response("websocket expected", { status: 400 });
  },
  websocket: {
    maxPayloadLength: unlimited,
    backpressureLimit: unlimited,
    idleTimeout: 0,
    open(ws: ServerWebSocket<RelayData>) {
      const upstream = new WebSocket(ws.data.upstreamUrl);
      upstream.binaryType = "arraybuffer";
      ws.data.upstream = upstream;
      upstream.onopen = () => {
        for (const chunk of ws.data.queue) upstream.send(chunk);
        ws.data.queue = [];
      };
      upstream.onmessage = (event) => {
        const chunk = new Uint8Array(event.data as ArrayBuffer);
        count(toProver, chunk.length);
        ws.sendBinary(chunk);
      };
      upstream.onclose = () => ws.close();
    },
    message(ws, message) {
      const chunk = typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);
      count(toNotary, chunk.length);
      if (ws.data.upstream?.readyState === WebSocket.OPEN) ws.data.upstream.send(chunk);
      else ws.data.queue.push(chunk);
    },
    close(ws) {
      ws.data.upstream?.close();
    },
  },
});

const client = createNotaryClient(notary.url);
const started = performance.now();
const session = await setupProverSession(
  { createSession: (s) => client.createSession(s), notarizeUrl: (id) => `ws://127.0.0.1:${relay.port}/notarize?sessionId=${id}` },
  localProvers,
  TARGET_HOST,
  sizes,
);
const setup = { seconds: (performance.now() - started) / 1000, toNotary: { ...toNotary }, toProver: { ...toProver } };
const bridge = startLoopbackBridge();
await revealAll(session, await getFromTarget(session, bridge, target.port!));
console.log(JSON.stringify({ sizes, setup, total: { seconds: (performance.now() - started) / 1000, toNotary, toProver } }, null, 2));
process.exit(0);
