/**
 * What one MPC session sends between prover and notary: the largest WebSocket message and the bytes in each
 * direction, during setup and in all, through a relay in front of the notary's /notarize socket (a real local
 * TLS target, one GET, everything revealed).
 *   bun scripts/mpc-traffic.ts <maxSentData> <maxRecvData>
 * The numbers feed the socket limits in src/notary/limits.ts.
 */
import { startLoopbackBridge } from "../src/engine/bridge.ts";
import { localProvers } from "../src/engine/prover.ts";
import { setupProverSession } from "../src/engine/session.ts";
import { startEngine } from "../src/engine/wasm.ts";
import { createLogger } from "../src/base/log.ts";
import { startNotaryServer } from "../src/app/notary.ts";
import { generateKey } from "../src/proof/keys.ts";
import { createNotaryClient } from "../src/prover/notary/client.ts";
import { mpcNotarySessions } from "../src/prover/mpc/notary-sessions.ts";
import { getFromTarget, revealAll } from "../testkit/engine-exchange.ts";
import { startNotaryRelay } from "../testkit/notary-relay.ts";
import { tlsFixture } from "../testkit/env.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";
import { localVerifiers } from "../src/engine/verifier.ts";

const [maxSentData, maxRecvData] = process.argv.slice(2).map(Number);
if (!maxSentData || !maxRecvData) throw new Error("usage: bun scripts/mpc-traffic.ts <maxSentData> <maxRecvData>");
const sizes = { maxSentData, maxRecvData };

const tls = tlsFixture();
const engine = { threads: 2, testTrustAnchorPem: tls.caPem };
await startEngine(engine);
const notary = startNotaryServer({
  verifiers: localVerifiers(engine),
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

const relay = startNotaryRelay(notary.url, { message: (direction, size) => count(direction === "toNotary" ? toNotary : toProver, size) });

// The whole notary API goes through the relay: only the /notarize socket's messages are counted.
const client = createNotaryClient(relay.url);
const started = performance.now();
const session = await setupProverSession(mpcNotarySessions(client), localProvers, TARGET_HOST, sizes);
const setup = { seconds: (performance.now() - started) / 1000, toNotary: { ...toNotary }, toProver: { ...toProver } };
const bridge = startLoopbackBridge();
await revealAll(session, await getFromTarget(session, bridge, target.port!));
console.log(JSON.stringify({ sizes, setup, total: { seconds: (performance.now() - started) / 1000, toNotary, toProver } }, null, 2));
process.exit(0);
