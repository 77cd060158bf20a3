/**
 * Memory per warm session: sets up N sessions one after another in one process (prover and embedded
 * notary share the wasm instance, as in `cli prover start`) and prints RSS and engine memory after each.
 *   bun scripts/pool-memory.ts <maxSentData> <maxRecvData> <sessions>
 * The numbers feed the memory model in src/engine/memory.ts (see BENCHMARKS.md).
 */
import { localProvers } from "../src/engine/prover.ts";
import { type ProverSession, setupProverSession } from "../src/engine/session.ts";
import { engineMemoryBytes, startEngine } from "../src/engine/wasm.ts";
import { createLogger } from "../src/base/log.ts";
import { loadOrCreateKey } from "../src/notary/key-files.ts";
import { startNotaryServer } from "../src/app/notary.ts";
import { createNotaryClient } from "../src/prover/notary/client.ts";
import { mpcNotarySessions } from "../src/prover/mpc/notary-sessions.ts";
import { scratchDir, tlsFixture } from "../testkit/env.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";
import { localVerifiers } from "../src/engine/verifier.ts";

const [maxSentData, maxRecvData, count] = process.argv.slice(2).map(Number);
if (!maxSentData || !maxRecvData || !count) throw new Error("usage: bun scripts/pool-memory.ts <maxSentData> <maxRecvData> <sessions>");
const sizes = { maxSentData, maxRecvData };

const engine = { threads: 2, testTrustAnchorPem: tlsFixture().caPem };
await startEngine(engine);
const notaryServer = startNotaryServer({
  verifiers: localVerifiers(engine),
  host: "127.0.0.1",
  port: 0,
  sessions: { concurrency: 64, ...sizes, timeoutMs: 3_600_000, connectTimeoutMs: 30_000 },
  key: loadOrCreateKey(scratchDir("pool-memory")),
  testTrustAnchor: true,
  log: createLogger({ level: "warn" }),
});
const notary = mpcNotarySessions(createNotaryClient(notaryServer.url));
const MiB = (bytes: number) => Math.round(bytes / 2 ** 20);

const held: ProverSession[] = [];
for (let k = 0; k <= count; k++) {
  const started = performance.now();
  if (k > 0) held.push(await setupProverSession(notary, localProvers, TARGET_HOST, sizes));
  Bun.gc(true);
  const setupS = k > 0 ? Number(((performance.now() - started) / 1000).toFixed(1)) : 0;
  console.log(JSON.stringify({ ...sizes, sessions: k, setupS, rssMiB: MiB(process.memoryUsage.rss()), engineMiB: MiB(engineMemoryBytes()) }));
}
process.exit(0);
