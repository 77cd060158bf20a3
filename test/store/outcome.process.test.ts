/**
 * One outcome per request id, with two real provers sharing a fresh PostgreSQL database: prover A reaches it
 * through a TCP proxy of this test's own (testkit/tcp-proxy.ts), so the database can stall or go away for A
 * alone while the server keeps running for everyone else; prover B reaches it directly. Proxy-mode sessions with
 * A's embedded notary (the store's rules are the same in every mode), against a target that holds its answer: the
 * session is still running when the link stalls or goes. What is checked: a client is never handed a proof the
 * store does not hold.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL, type Server } from "bun";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { type SseEvent, errorData, openStream, proofData } from "../../testkit/sse.ts";
import { startTarget } from "../../testkit/target.ts";
import { type TcpProxy, startTcpProxy } from "../../testkit/tcp-proxy.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { eventually } from "../../testkit/wait.ts";
import { sample, scrapeMetrics } from "../../testkit/metrics.ts";
import { waitForLog } from "../../testkit/notary.ts";
import { PG_URL } from "./backends.ts";

const PROOF_MS = 120_000;
/** How long the target holds each answer: the time the test has to stall or cut A's link mid-session. */
const HELD_MS = 3_000;
const DATABASE = `test_outcome_${process.pid}`;
/** The shortest instance timeout the configuration takes: A is declared dead 3-4 s after its last heartbeat. */
const INSTANCE_TIMEOUT_S = "3";
const STOPPED = { code: "session_failed", message: "the prover running this session stopped" };

describe("two provers on PostgreSQL, one of them behind a link the test can stall or cut", () => {
  let target: Server<undefined>;
  let admin: SQL;
  let db: SQL;
  let link: TcpProxy;
  let a: RunningProver;
  let b: RunningProver;

  const databaseUrl = (port?: number) => {
    const url = new URL(PG_URL);
    url.pathname = `/${DATABASE}`;
    if (port !== undefined) url.port = String(port);
    return url.toString();
  };
  const proxy = (prover: RunningProver, requestId: string) =>
    fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/slow?ms=${HELD_MS}`, "T-REQUEST-ID": requestId } });
  const subscribe = (prover: RunningProver, requestId: string) => openStream(`${prover.url}/proof/${requestId}`, PROOF_MS);
  const only = (events: SseEvent[]): SseEvent => {
    expect(events).toHaveLength(1);
    return events[0]!;
  };
  /**
   * Whether A runs a proxy-mode session for `requestId` and its id is claimed (A claims it while the session
   * opens): the outcome is not yet saved. Checked within the target's hold.
   */
  const sessionRunning = async (requestId: string) => {
    const running = async () => (sample(await scrapeMetrics(a.url), "tlsproof_proxy_mode_sessions") ?? 0) > 0 && (await state(requestId)) === "pending";
    // The session holds for HELD_MS once it runs: polled often, it is seen however late a loaded machine starts it.
    return eventually(running, (yes) => yes, 30_000, { intervalMs: 50 });
  };
  /** Proof messages in the store that name this request id. */
  const storedProofs = async (requestId: string) =>
    // A proof's texts are large: they are in messages_texts, the message row pointing there (src/store/sql.ts).
    Number((await db`SELECT count(*)::int AS n FROM messages m LEFT JOIN messages_texts t ON t.id = m.text_id
      WHERE m.stream_id = 'proofs' AND COALESCE(t.raw_json, m.raw_json) LIKE ${`%${requestId}%`}`)[0].n);
  const state = async (requestId: string) => (await db`SELECT state FROM messages_requests WHERE request_id = ${requestId}`)[0]?.state as string | undefined;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    admin = new SQL(PG_URL, { max: 1 });
    await admin.unsafe(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE ${DATABASE}`);
    db = new SQL(databaseUrl(), { max: 1 });
    const server = new URL(PG_URL);
    link = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const env = { PROVER_INSTANCE_TIMEOUT: `${INSTANCE_TIMEOUT_S}s`, PROVER_HOST: "127.0.0.1", PROVER_PROOF_MODE: "proxy" };
    a = await startProver(SOURCE_CLI, target.port!, { ...env, PROVER_STORE_URL: databaseUrl(link.port) });
    b = await startProver(SOURCE_CLI, target.port!, { ...env, PROVER_STORE_URL: databaseUrl() });
  }, 120_000);

  afterAll(async () => {
    for (const prover of [a, b]) prover?.process.kill("SIGKILL");
    await Promise.all([a, b].map((prover) => prover?.process.exited));
    await link?.close();
    target?.stop(true);
    await db?.close();
    await admin?.unsafe(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await admin?.close();
  }, 60_000);

  test(
    "a prover declared dead while its database link stalls mid-session: its late proof is not delivered; its subscribers, like the other prover's, get the session_failed the store holds, and the late save is logged as an error",
    async () => {
      const requestId = crypto.randomUUID();
      const [atA, atB] = [await subscribe(a, requestId), await subscribe(b, requestId)];
      const answer = proxy(a, requestId).then(async (r) => ({ status: r.status, body: await r.text() }));
      expect(await sessionRunning(requestId)).toBe(true);
      link.pause();
      try {
        // A's heartbeats hang on the stalled link: B declares it dead and settles its id.
        await waitForLog(b.process, b.log, /request ids of a stopped prover settled as failed/, 60_000);
        expect(await state(requestId)).toBe("error");
      } finally {
        link.resume();
      }
      expect((await answer).status).toBe(200);
      expect(errorData(only(await atA.events))).toEqual({ requestId, ...STOPPED });
      expect(errorData(only(await atB.events))).toEqual({ requestId, ...STOPPED });
      await waitForLog(a.process, a.log, new RegExp(`ERROR a proof was made for an id already settled.*requestId=${requestId}.*recorded=session_failed`), PROOF_MS);
      expect(await storedProofs(requestId)).toBe(0);
      // A late subscriber, on either prover, gets the same.
      for (const prover of [a, b]) expect(errorData(only(await (await subscribe(prover, requestId)).events))).toEqual({ requestId, ...STOPPED });
    },
    PROOF_MS,
  );

  test(
    "the database goes away mid-session: the proof is not delivered unstored; once it is back the prover works again, and the request id used before is refused",
    async () => {
      const requestId = crypto.randomUUID();
      const atA = await subscribe(a, requestId);
      const answer = proxy(a, requestId).then((r) => r.status);
      expect(await sessionRunning(requestId)).toBe(true);
      link.cut();
      try {
        expect(await answer).toBe(200);
        const failure = errorData(only(await atA.events));
        expect(failure).toMatchObject({ requestId, code: "storage_failed" });
        await waitForLog(a.process, a.log, new RegExp(`storing the proof failed.*requestId=${requestId}`), 10_000);
      } finally {
        link.restore();
      }
      expect(await storedProofs(requestId)).toBe(0);

      // Back: a new id is proved through A, stored, and reaches a subscriber on B too.
      const next = crypto.randomUUID();
      const [nextAtA, nextAtB] = [await subscribe(a, next), await subscribe(b, next)];
      const response = await proxy(a, next);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const proof = proofData(only(await nextAtA.events)).proofText;
      expect(proofData(only(await nextAtB.events)).proofText).toBe(proof);
      expect(await storedProofs(next)).toBe(1);

      // The id claimed before the database went away stays used, on both provers.
      for (const prover of [a, b]) {
        const again = await proxy(prover, requestId);
        expect(again.status).toBe(400);
        expect(((await again.json()) as { error: { code: string } }).error.code).toBe("duplicate_request_id");
      }
    },
    2 * PROOF_MS,
  );
});
