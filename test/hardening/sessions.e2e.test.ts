import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { PG_URL } from "../store/backends.ts";
import { TEST_SESSION, scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { type SseEvent, allEvents, errorData, openStream, proofData } from "../../testkit/sse.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { once } from "../../testkit/once.ts";
import { eventually, waitForLog } from "../../testkit/notary.ts";

/**
 * Real sessions that carry secrets, through `cli prover start` with API keys on, its message store on each
 * backend and its embedded notary: PUT and DELETE forwarded and proved, several subscribers at once with heartbeats,
 * a late subscriber, logs in both formats free of every secret after those sessions, the proof history's `from` and
 * `range` queries across a restart, and the notary's key surviving it. Each backend proves in one mode: the default
 * SQLite file in its data folder with MPC, PostgreSQL (PROVER_STORE_URL) in proxy mode (what the store keeps and
 * delivers is the same in both). The MPC run also sends a request too large for its announced T-MAX-SENT-DATA (an
 * MPC session's limit) and meets a SIGTERM grace period that runs out mid-proof (an MPC proof lasts seconds).
 * Tests that look at the same session share it (made once, by whichever needs it first): each also runs alone.
 */
const MPC_MS = 240_000;
const KEY = "sessions-api-key-5e4d3c2b1a09";
const HEADER_SECRET = "hdr-secret-in-session-8f7e6d5c";
const BODY_SECRET = "body-secret-in-session-2b3c4d5e";
const HIDDEN = "█";
/**
 * Hides the secrets where they are sent (the body, hidden whole: MPC proves a body holding a hidden value only so, see
 * src/prover/mpc/request-layout.ts) and where /echo sends them back (inside its JSON `body` string).
 */
const REDACTED = `req:body:, search:${BODY_SECRET}, search:${HEADER_SECRET}`;
const auth = { authorization: `Bearer ${KEY}` };
/** A proofs stream of this run alone: the PostgreSQL database is shared with other test runs. */
const PROOF_STREAM = `proofs-sessions-${crypto.randomUUID()}`;

interface Verified {
  valid: boolean;
  requestId: string;
  serverName: string;
  sent: { text: string };
  recv: { text: string };
}

const runs = [
  { store: "sqlite", mode: "mpc" },
  { store: "postgres", mode: "proxy" },
] as const;

describe.each(runs)("real sessions carrying secrets, on a prover with its store on $store, proving in $mode mode", ({ store, mode }) => {
  let target: Server<undefined>;
  let prover: RunningProver;
  let work: string;
  /** Every log line of every prover process of this file. */
  const logs: string[] = [];

  const env = (logFormat: "json" | "compact", extra: Record<string, string> = {}) => ({
    PROVER_API_KEYS: KEY,
    ...(store === "postgres" ? { PROVER_STORE_URL: PG_URL } : {}),
    PROVER_PROOF_MODE: mode,
    PROVER_PROOF_STREAM: PROOF_STREAM,
    LOG_FORMAT: logFormat,
    // Proof streams then write a heartbeat comment every second (a third of the idle limit).
    PROVER_IDLE_TIMEOUT: "3s",
    // A SIGTERM mid-proof outlasts it (the last test); the other stops find no session running.
    PROVER_SHUTDOWN_GRACE: "1s",
    ...extra,
  });
  const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;
  const proofUrl = (requestId: string) => `${prover.url}/proof/${requestId}`;
  const proxy = (requestId: string, init: RequestInit & { headers: Record<string, string> }) =>
    fetch(`${prover.url}/proxy`, { ...init, headers: { "t-request-id": requestId, ...auth, ...init.headers } });
  async function verify(proofText: string, keyPath = prover.notaryPubPath): Promise<Verified> {
    const proofPath = join(work, `${crypto.randomUUID()}.json`);
    writeFileSync(proofPath, proofText);
    const result = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", keyPath, "--proof", proofPath, "--json"]);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    return JSON.parse(result.stdout) as Verified;
  }
  const history = async (query: string) => {
    const response = await fetch(`${prover.url}/stores/${encodeURIComponent(PROOF_STREAM)}/data/partitions/0/${query}`, { headers: auth });
    expect(response.status).toBe(200);
    return ((await response.json()) as { messages: { metadata: { id: { timestamp: number } }; content: { body: { requestId: string } } }[] })
      .messages;
  };
  /** Stops the prover (SIGTERM) and keeps its log. */
  async function stopProver(): Promise<number> {
    const code = await prover.stop();
    logs.push(prover.log());
    return code;
  }

  beforeAll(async () => {
    work = scratchDir("sessions");
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, env("json"));
  }, 120_000);

  // A test that ended the prover (SIGTERM) leaves the next one a prover on the same data folder.
  beforeEach(async () => {
    if (prover.process.exitCode === null) return;
    logs.push(prover.log());
    prover = await startProver(SOURCE_CLI, target.port!, env("compact", { PROVER_DATA_DIR: prover.dataDir }));
  }, 120_000);

  afterAll(async () => {
    if (prover && prover.process.exitCode === null) prover.process.kill("SIGKILL");
    target?.stop(true);
  }, 120_000);

  /**
   * The sessions several tests look at, each made once by whichever test needs it first (testkit/once.ts): the
   * PUT on the first prover (JSON logs), its restart, then the DELETE on the restarted one (compact logs).
   */
  const putSession = once(async () => {
    const requestId = crypto.randomUUID();
    const madeBy = prover;
    // Each subscription is registered (its first comment arrived) before the /proxy call.
    const streams = await Promise.all([1, 2, 3].map(() => openStream(proofUrl(requestId), MPC_MS, { headers: auth })));
    const commentsAtOpen = streams.map((stream) => [...stream.comments]);
    // An MPC session lasts seconds, a proxy-mode one milliseconds: there, the streams have waited a heartbeat first.
    if (mode === "proxy") expect(await eventually(() => streams.every((s) => s.comments.includes("heartbeat")), (all) => all, 10_000)).toBe(true);
    const response = await proxy(requestId, {
      method: "PUT",
      headers: {
        "t-proxy-url": url("/echo"),
        "t-redacted": REDACTED,
        "content-type": "application/json",
      },
      body: JSON.stringify({ card: BODY_SECRET, amount: 3, apiSecret: HEADER_SECRET }),
    });
    const echoed = (await response.json()) as { method: string; headers: Record<string, string>; body: string };
    const received: SseEvent[][] = await Promise.all(streams.map((stream) => stream.events));
    const proofText = received[0]?.[0]?.event === "message" ? proofData(received[0][0]).proofText : "";
    return { requestId, madeBy, streams, commentsAtOpen, response, echoed, received, proofText };
  });

  const restart = once(async () => {
    const put = await putSession();
    const before = { notaryPubPem: prover.notaryPubPem, info: (await (await fetch(`${prover.url}/info`)).json()) as Record<string, unknown> };
    const exitCode = await stopProver();
    prover = await startProver(SOURCE_CLI, target.port!, env("compact", { PROVER_DATA_DIR: prover.dataDir }));
    return { put, before, exitCode };
  });

  const deleteSession = once(async () => {
    const { put } = await restart();
    const requestId = crypto.randomUUID();
    const response = await proxy(requestId, {
      method: "DELETE",
      headers: {
        "t-proxy-url": url("/echo?item=7"),
        "t-redacted": REDACTED,
        "content-type": "application/json",
      },
      body: JSON.stringify({ card: BODY_SECRET, apiSecret: HEADER_SECRET }),
    });
    const echoed = (await response.json()) as { method: string; path: string; body: string };
    // The proof exists before anyone subscribes: the prover logged it.
    await waitForLog(prover.process, prover.log, new RegExp(`proof made.*requestId=${requestId}|requestId=${requestId}.*proof made`), MPC_MS);
    const late = await openStream(proofUrl(requestId), 10_000, { headers: auth });
    return { put, requestId, response, echoed, events: await late.events };
  });

  test(
    "PUT with a secret body: three subscribers opened first all get the same proof after heartbeats; cli verify shows the PUT with the secrets hidden",
    async () => {
      const { requestId, commentsAtOpen, response, echoed, received, proofText, streams, madeBy } = await putSession();
      for (const comments of commentsAtOpen) expect(comments).toEqual(["waiting for the proof"]);
      expect(response.status).toBe(200);
      expect(response.headers.get("t-proof-id")).toBe(requestId);
      expect(echoed.method).toBe("PUT");
      expect(echoed.headers.authorization).toBeUndefined(); // the prover's API key is never forwarded
      expect(JSON.parse(echoed.body)).toEqual({ amount: 3, apiSecret: HEADER_SECRET, card: BODY_SECRET });

      for (const events of received) expect(events).toHaveLength(1);
      const { publicKey } = proofData(received[0]![0]!);
      for (const events of received) expect(events[0]!.data).toBe(received[0]![0]!.data);
      expect(publicKey).toBe(madeBy.notaryPubPem);
      // Every stream was kept alive while it waited (the MPC session took seconds; the proxy-mode one waited above).
      for (const stream of streams) expect(stream.comments.filter((c) => c === "heartbeat").length).toBeGreaterThan(0);

      for (const secret of [HEADER_SECRET, BODY_SECRET, KEY]) expect(proofText).not.toContain(secret);
      const verified = await verify(proofText, madeBy.notaryPubPath);
      expect(verified).toMatchObject({ valid: true, requestId, serverName: TARGET_HOST });
      expect(verified.sent.text).toStartWith("PUT /echo HTTP/1.1\r\n");
      // The body hidden whole, its length shown (the engine writes JSON with its keys sorted).
      expect(verified.sent.text).toEndWith(`\r\n\r\n${HIDDEN.repeat(JSON.stringify({ amount: 3, apiSecret: HEADER_SECRET, card: BODY_SECRET }).length)}`);
      expect(verified.recv.text).toContain('"method":"PUT"');
      for (const secret of [HEADER_SECRET, BODY_SECRET]) expect(verified.recv.text).not.toContain(secret);
    },
    MPC_MS,
  );

  test(
    "the JSON log after that session holds the request's lines and none of the secrets or keys",
    async () => {
      const { requestId, madeBy } = await putSession();
      const log = madeBy.log();
      const lines = log.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
      const ofRequest = lines.filter((line) => line.requestId === requestId).map((line) => line.msg ?? line.message);
      expect(ofRequest).toContain("proof made");
      expectNoSecrets(log, madeBy.dataDir);
    },
    MPC_MS,
  );

  test(
    "restarted on the same data folder with compact logs: the notary's key is the same, and the earlier proof is still delivered and verifies",
    async () => {
      const { put, before, exitCode } = await restart();
      expect(exitCode).toBe(0);
      expect(prover.notaryPubPem).toBe(before.notaryPubPem);
      const infoAfter = (await (await fetch(`${prover.url}/info`)).json()) as Record<string, unknown>;
      expect(JSON.stringify(infoAfter)).toContain(JSON.stringify(before.notaryPubPem).slice(1, -1));
      expect(infoAfter).toEqual(before.info);
      const events = await allEvents(proofUrl(put.requestId), 10_000, { headers: auth });
      expect(proofData(events[0]!).proofText).toBe(put.proofText);
      expect((await verify(put.proofText)).valid).toBe(true);
    },
    MPC_MS + 120_000,
  );

  test(
    "DELETE with a secret body, subscribed to only after the proof was made: proved, verified, and the compact log holds no secret",
    async () => {
      const { requestId, response, echoed, events } = await deleteSession();
      expect(response.status).toBe(200);
      expect(echoed).toMatchObject({ method: "DELETE", path: "/echo?item=7" });
      expect(JSON.parse(echoed.body)).toEqual({ apiSecret: HEADER_SECRET, card: BODY_SECRET });
      expect(events).toHaveLength(1);
      const { proofText } = proofData(events[0]!);
      for (const secret of [HEADER_SECRET, BODY_SECRET, KEY]) expect(proofText).not.toContain(secret);
      const verified = await verify(proofText);
      expect(verified).toMatchObject({ valid: true, requestId });
      expect(verified.sent.text).toStartWith("DELETE /echo?item=7 HTTP/1.1\r\n");
      expect(verified.sent.text).toEndWith(`\r\n\r\n${HIDDEN.repeat(JSON.stringify({ apiSecret: HEADER_SECRET, card: BODY_SECRET }).length)}`);
      expect(verified.recv.text).toContain('"method":"DELETE"');
      for (const secret of [HEADER_SECRET, BODY_SECRET]) expect(verified.recv.text).not.toContain(secret);
      expectNoSecrets(prover.log(), prover.dataDir);
    },
    2 * MPC_MS + 120_000,
  );

  test(
    "the proof history: `from` lists both proofs in order across the restart, `range` selects one",
    async () => {
      const { put, requestId } = await deleteSession();
      const made: [string, string] = [put.requestId, requestId];
      const all = await history("from?fromTimestamp=0");
      expect(all.map((m) => m.content.body.requestId)).toEqual(made);
      const [first, second] = all.map((m) => m.metadata.id.timestamp) as [number, number];
      expect(second).toBeGreaterThan(first);
      const onlyFirst = await history(`range?fromTimestamp=${first}&toTimestamp=${second - 1}`);
      expect(onlyFirst.map((m) => m.content.body.requestId)).toEqual([made[0]]);
      const onlySecond = await history(`from?fromTimestamp=${first + 1}`);
      expect(onlySecond.map((m) => m.content.body.requestId)).toEqual([made[1]]);
    },
    2 * MPC_MS + 120_000,
  );

  // MPC's own: a session's announced limit, and a proof that lasts long enough for a SIGTERM to land inside it.
  if (mode === "mpc") {
    test(
      "a request larger than its announced T-MAX-SENT-DATA: the client's answer is a 502 naming that size, and no proof",
      async () => {
        const requestId = crypto.randomUUID();
        const subscriber = await openStream(proofUrl(requestId), MPC_MS, { headers: auth });
        const response = await proxy(requestId, {
          method: "POST",
          headers: { "t-proxy-url": url("/echo"), "t-max-sent-data": "256", "t-max-recv-data": "1024", "content-type": "application/json" },
          body: JSON.stringify({ pad: "p".repeat(400) }),
        });
        const body = (await response.json()) as { error: { code: string; message: string } };
        expect({ status: response.status, code: body.error.code }).toEqual({ status: 502, code: "response_too_large" });
        expect(body.error.message).toContain("sent 256 bytes");
        expect(errorData((await subscriber.events)[0]!)).toMatchObject({ requestId, code: "response_too_large" });
        // Above the prover's own limit the announcement itself is refused, before any session.
        const tooBig = await proxy(crypto.randomUUID(), {
          headers: { "t-proxy-url": url("/echo"), "t-max-sent-data": String(TEST_SESSION.maxSentData * 64) },
        });
        expect(((await tooBig.json()) as { error: { code: string } }).error.code).toBe("session_too_large");
        expect(tooBig.status).toBe(400);
      },
      MPC_MS,
    );

    test(
      "SIGTERM with a grace period that runs out mid-proof: the /proxy call answers 503 shutting_down, the subscriber is told so too, exit 0",
      async () => {
        const requestId = crypto.randomUUID();
        const subscriber = await openStream(proofUrl(requestId), MPC_MS, { headers: auth });
        const call = proxy(requestId, { headers: { "t-proxy-url": url("/data") } }).then(
          async (r) => ({ status: r.status, code: ((await r.json()) as { error?: { code: string } }).error?.code }),
          () => "no answer",
        );
        const pool = async () => ((await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as { notarySessions: number }).notarySessions;
        expect(await eventually(pool, (n) => n === 1, 30_000)).toBe(1);
        prover.process.kill("SIGTERM");
        await waitForLog(prover.process, prover.log, /grace period over/, 30_000);
        expect(errorData((await subscriber.events)[0]!)).toMatchObject({ requestId, code: "shutting_down" });
        expect(await prover.process.exited).toBe(0);
        logs.push(prover.log());
        expect(await call).toEqual({ status: 503, code: "shutting_down" });
        for (const log of logs) expectNoSecrets(log, prover.dataDir);
      },
      MPC_MS,
    );
  }
});

/** No API key, secret header or body value, notary private key or node key in a log. */
function expectNoSecrets(log: string, dataDir: string) {
  const keyBody = (file: string) =>
    readFileSync(join(dataDir, file), "utf8")
      .split("\n")
      .filter((line) => line && !line.startsWith("-----"))
      .join("");
  for (const secret of [KEY, HEADER_SECRET, BODY_SECRET, keyBody("notary.key")]) expect(log).not.toContain(secret);
  const nodeKey = readFileSync(join(dataDir, "node.key"), "utf8").trim();
  expect(nodeKey.length).toBeGreaterThan(0);
  expect(log).not.toContain(nodeKey);
}
