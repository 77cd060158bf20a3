import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { EngineHostStatus } from "../../../../src/engine/host/engine-hosts.ts";
import type { PoolStatus } from "../../../../src/prover/mpc/pool/pool.ts";
import { TEST_SESSION, tlsFixture } from "../../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../../testkit/prover.ts";
import { firstEvent, proofData } from "../../../../testkit/sse.ts";
import { type TargetAnswerTimes, startTarget } from "../../../../testkit/target.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";
import { eventually, waitUntil } from "../../../../testkit/wait.ts";

type PoolReply = PoolStatus & {
  exchanges: { running: number; waiting: number };
  notarySessions: number | null;
  memory: { rssBytes: number; engineBytes: number };
  engineHosts: { hosts: EngineHostStatus[] };
};

const IDLE_S = 8;
/** Above the pool's 2048 received bytes, within the prover's limit: needs an on-demand session. */
const BIG_RECV = 3072;
const MPC_STEP_MS = 180_000;

/**
 * The warm pool in a real `cli prover start` process with its embedded notary: one warm session for the
 * test host, taken by /proxy, refilled, expired when idle (freeing the notary side), and bypassed by a
 * request that announces a bigger session.
 */
/** A running prover's pool, seen through `/pool` and `/proxy`. */
function poolClient(prover: () => RunningProver, target: () => Server<undefined>) {
  const pool = async (): Promise<PoolReply> => (await fetch(`${prover().url}/pool`)).json() as Promise<PoolReply>;
  const poolUntil = (what: string, done: (p: PoolReply) => boolean, timeoutMs = MPC_STEP_MS): Promise<PoolReply> =>
    waitUntil(`the pool: ${what}`, pool, done, timeoutMs, { context: () => prover().log() });
  /** Sends one /proxy request for `path` on the target and waits for its SSE outcome. */
  async function proxy(headers: Record<string, string> = {}, path = "/data") {
    const requestId = crypto.randomUUID();
    const outcome = firstEvent(`${prover().url}/proof/${requestId}`, MPC_STEP_MS);
    const started = performance.now();
    const response = await fetch(`${prover().url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target().port}${path}`, "T-REQUEST-ID": requestId, ...headers },
    });
    const body = await response.text();
    const latencyMs = performance.now() - started;
    return { response, body, latencyMs, event: await outcome };
  }
  return { pool, poolUntil, proxy };
}

describe("warm pool (real MPC)", () => {
  let target: Server<undefined>;
  let prover: RunningProver;
  const { pool, poolUntil, proxy } = poolClient(() => prover, () => target);
  const notarySessionsCreated = () => prover.log().match(/session created/g)?.length ?? 0;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, {
      PROVER_POOL_SIZE: "1",
      PROVER_POOL_HOSTS: TARGET_HOST,
      PROVER_POOL_IDLE: `${IDLE_S}s`,
      PROVER_MAX_RECV_DATA: String(BIG_RECV),
      PROVER_POOL_MAX_RECV_DATA: String(TEST_SESSION.maxRecvData),
    });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 60_000);

  let warmedInMs = 0;
  test("warms a session for the configured host at start", async () => {
    const started = performance.now();
    const status = await poolUntil("one ready session", (p) => p.ready === 1);
    warmedInMs = performance.now() - started;
    expect(status).toMatchObject({
      size: 1,
      sizes: TEST_SESSION,
      warming: 0,
      inUse: 0,
      hosts: [{ host: TARGET_HOST, learned: false, share: 1, ready: 1, warming: 0 }],
      served: { ready: 0, warming: 0, onDemand: 0 },
      notarySessions: 1,
    });
    expect(status.memory.engineBytes).toBeGreaterThan(0);
  }, MPC_STEP_MS);

  test("/proxy takes the warm session, and its proof verifies", async () => {
    const { response, body, latencyMs, event } = await proxy();
    expect(response.status).toBe(200);
    expect(JSON.parse(body).user.name).toBe("alice");
    const status = await pool();
    expect(status.served).toEqual({ ready: 1, warming: 0, onDemand: 0 });
    console.log(`warm /proxy answered in ${Math.round(latencyMs)} ms; warming the session took ${Math.round(warmedInMs)} ms`);

    const verified = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", "-", "--json"], proofData(event).proofText);
    expect(verified.exitCode).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, serverName: TARGET_HOST });
  }, MPC_STEP_MS);

  test("the pool refills after the request", async () => {
    const status = await poolUntil("ready again", (p) => p.ready === 1);
    expect(status).toMatchObject({ inUse: 0, served: { ready: 1, onDemand: 0 }, notarySessions: 1 });
  }, MPC_STEP_MS);

  test("an idle session is closed on both sides and replaced", async () => {
    const createdBefore = notarySessionsCreated();
    await poolUntil("an expiry", (p) => p.expired >= 1, (IDLE_S + 10) * 1000);
    // The replacement's notary session exists once it is created; the expired one must be gone by then.
    expect(await eventually(notarySessionsCreated, (n) => n > createdBefore, 10_000)).toBe(createdBefore + 1);
    const status = await poolUntil("the notary holding only the replacement", (p) => p.notarySessions === 1, 5_000);
    expect(status).toMatchObject({ ready: 0, warming: 1, expired: 1 });
  }, 60_000);

  test("a request announcing more than the pool's sizes is served by an on-demand session", async () => {
    // Wait for the replacement first: two setups at once would only slow each other down.
    const before = await poolUntil("the replacement ready", (p) => p.ready === 1);
    const { response, event } = await proxy({ "T-MAX-RECV-DATA": String(BIG_RECV) });
    expect(response.status).toBe(200);
    expect(JSON.parse(proofData(event).proofText).body.requestId).toBeString();
    const after = await pool();
    expect(after.served.onDemand).toBe(before.served.onDemand + 1);
    expect(after.served.ready + after.served.warming).toBe(before.served.ready + before.served.warming);
  }, 2 * MPC_STEP_MS); // two setups: the replacement, then the on-demand one

  test("announced sizes above the prover's limits are refused before any MPC", async () => {
    const response = await fetch(`${prover.url}/proxy`, {
      headers: {
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`,
        "T-REQUEST-ID": crypto.randomUUID(),
        "T-MAX-RECV-DATA": String(BIG_RECV + 1),
      },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("session_too_large");
  });
});

/**
 * Two warm sessions in two engine hosts: a request takes one, and its refill starts at once in the other host,
 * which is paused while the request's exchange runs; the pool fills up again. Then two warm requests at once take
 * turns with their target.
 */
describe("a refill yields to a warm request's exchange; exchanges take turns (real MPC)", () => {
  let target: Server<undefined>;
  let prover: RunningProver;
  const { pool, poolUntil, proxy } = poolClient(() => prover, () => target);
  const slowAnswers: Parameters<TargetAnswerTimes>[1][] = [];

  beforeAll(async () => {
    target = startTarget(tlsFixture(), (_, at) => slowAnswers.push(at));
    prover = await startProver(SOURCE_CLI, target.port!, {
      PROVER_POOL_SIZE: "2",
      PROVER_POOL_HOSTS: TARGET_HOST,
      PROVER_ENGINE_HOSTS: "2",
      PROVER_CONCURRENT_EXCHANGES: "1",
      // One class: what the first request teaches leaves the second warm session wanted.
      PROVER_SIZE_CLASSES: `${TEST_SESSION.maxSentData}/${TEST_SESSION.maxRecvData}`,
    });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 60_000);

  test("a refill starts as soon as a warm session is taken, in the other host, paused while that request's exchange runs", async () => {
    const before = await poolUntil("two ready sessions", (p) => p.ready === 2 && p.warming === 0, 2 * MPC_STEP_MS);
    const pausedBefore = before.engineHosts.hosts.map((h) => h.pausedMs);
    // A slow answer keeps the exchange live after the refill's Verifier has connected (only then may it yield).
    const request = proxy({}, "/slow?ms=4000");
    await poolUntil("a refill beside the request in use", (p) => p.inUse === 1 && p.warming === 1, 30_000);
    const { response, event } = await request;
    expect(response.status).toBe(200);
    expect(event.event).toBe("message");
    const after = await pool();
    expect(after.served.ready - before.served.ready).toBe(1);
    expect(after.served.onDemand).toBe(0);
    const pausedFor = after.engineHosts.hosts.map((h, i) => h.pausedMs - (pausedBefore[i] ?? 0));
    expect(Math.max(...pausedFor)).toBeGreaterThan(500);
    // The host of the request's session ran throughout.
    expect(Math.min(...pausedFor)).toBe(0);
    const refilled = await poolUntil("two ready sessions again", (p) => p.ready === 2 && p.warming === 0);
    expect(refilled).toMatchObject({ failures: 0, lastError: null });
    expect(refilled.engineHosts.hosts.every((h) => !h.paused)).toBe(true);
  }, 4 * MPC_STEP_MS);

  test("two warm requests at once: the second waits with its session and reaches the target once the first's exchange is over", async () => {
    const before = await poolUntil("two ready sessions, no refill", (p) => p.ready === 2 && p.warming === 0);
    const answeredBefore = slowAnswers.length;
    const both = Promise.all([proxy({}, "/slow?ms=2000"), proxy({}, "/slow?ms=2000")]);
    // PROVER_CONCURRENT_EXCHANGES=1: one exchange at a time.
    const turn = await poolUntil("one exchange running, one request waiting", (p) => p.exchanges.waiting === 1);
    expect(turn.exchanges.running).toBe(1);
    const answers = await both;
    for (const { response, event } of answers) {
      expect(response.status).toBe(200);
      expect(event.event).toBe("message");
    }
    const after = await pool();
    expect(after.served.ready - before.served.ready).toBe(2);
    expect(after.exchanges).toEqual({ running: 0, waiting: 0 });
    const theirs = slowAnswers.slice(answeredBefore);
    expect(theirs).toHaveLength(2);
    const [first, second] = theirs.toSorted((a, b) => a.arrivedMs - b.arrivedMs) as [(typeof slowAnswers)[0], (typeof slowAnswers)[0]];
    expect(second.arrivedMs).toBeGreaterThan(first.answeredMs);
  }, 4 * MPC_STEP_MS);
});
