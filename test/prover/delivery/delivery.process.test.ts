import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import EventSource from "eventsource";
import { scratchDir, tlsFixture } from "../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../testkit/prover.ts";
import { keepAliveExchange } from "../../../testkit/keep-alive.ts";
import { allEvents, errorData, firstEvent, proofData } from "../../../testkit/sse.ts";
import { startTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { sample, scrapeMetrics } from "../../../testkit/metrics.ts";
import type { PromMetrics } from "prom2javascript";
import { once } from "../../../testkit/once.ts";
import { eventually, waitUntil } from "../../../testkit/wait.ts";

/**
 * Proof delivery as a client of Verity's prover sees it (the `eventsource` package driven the way Verity's
 * TypeScript client drives it), and every outcome staying reachable by its request id: after the in-memory
 * retention (set to 0 here: every late read comes from the store), after a restart, after a crash.
 * Real `cli prover start` processes with their embedded notary, the local TLS target. Delivery is the same for
 * every mode, so the proofs are proxy mode's (MPC's own waits and idle limit: test/hardening/sessions.e2e.test.ts).
 */
const PROOF_MS = 60_000;
const ENV = {
  PROVER_PROOF_MODE: "proxy",
  PROVER_PROOF_RETENTION: "0s",
  PROVER_UNKNOWN_REQUEST_TIMEOUT: "2s",
  PROVER_IDLE_TIMEOUT: "3s",
};

interface VerityStyleResult {
  response: Response;
  /** What `onmessage` received, or undefined when `onerror` fired. */
  proofData?: string;
  /** What `onerror` received. */
  error?: MessageEvent;
  /** The prover's metrics before the /proxy call, and once it had answered (before the stream's event was awaited). */
  metrics: { before: PromMetrics; atAnswer: PromMetrics };
}

/**
 * What Verity's client does: opens an EventSource on /proof/{id}; once it is open, calls /proxy with
 * T-REQUEST-ID, T-PROXY-URL and T-REDACTED; takes the first unnamed event as the proof and closes; takes
 * an error as "no proof" and closes.
 */
async function verityStyleRequest(proverUrl: string, targetUrl: string, headers: Record<string, string> = {}): Promise<VerityStyleResult> {
  const requestId = crypto.randomUUID();
  const source = new EventSource(`${proverUrl}/proof/${requestId}`);
  const outcome = new Promise<{ data?: string; error?: MessageEvent }>((resolve) => {
    source.onmessage = (event) => {
      source.close();
      resolve({ data: event.data as string });
    };
    source.onerror = (event) => {
      source.close();
      resolve({ error: event as MessageEvent });
    };
  });
  await new Promise<void>((resolve) => (source.onopen = () => resolve()));
  const before = await scrapeMetrics(proverUrl);
  const response = await fetch(`${proverUrl}/proxy`, {
    headers: { "T-REQUEST-ID": requestId, "T-PROXY-URL": targetUrl, ...headers },
  });
  const atAnswer = await scrapeMetrics(proverUrl);
  const { data, error } = await outcome;
  return { response, proofData: data, error, metrics: { before, atAnswer } };
}

describe("proof delivery: Verity's client contract, outcomes reachable for ever", () => {
  let target: Server<undefined>;
  let prover: RunningProver;
  let dataDir: string;
  let work: string;
  const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;
  /** An outcome seen live, read again later: its request id and the event a subscriber got. */
  type Seen = { requestId: string; kind: "proof" | "error"; data: string };
  const proofUrl = (requestId: string) => `${prover.url}/proof/${requestId}`;
  const proxy = (requestId: string, path = "/data") =>
    fetch(`${prover.url}/proxy`, { headers: { "T-REQUEST-ID": requestId, "T-PROXY-URL": url(path) } });
  const errorCode = async (response: Response) => ({ status: response.status, code: ((await response.json()) as { error: { code: string } }).error.code });
  /** Proxy-mode proofs running now (the embedded notary's sessions for /proxy calls). */
  const notarySessions = async () => sample(await scrapeMetrics(prover.url), "tlsproof_proxy_mode_sessions") ?? 0;
  const storedProofIds = async () => {
    const answer = (await (await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=100`)).json()) as {
      messages: { content: { body: { requestId: string } } }[];
    };
    return answer.messages.map((m) => m.content.body.requestId);
  };

  /** A proof, through Verity's client. */
  const proved = once(() => verityStyleRequest(prover.url, url("/data"), { "T-REDACTED": "res:body:secret" }));
  /** A target's 404 without T-PROVE-FAILED-REQ, through Verity's client. */
  const refused404 = once(() => verityStyleRequest(prover.url, url("/status/404")));
  const provedSeen = async (): Promise<Seen> => {
    const data = (await proved()).proofData!;
    const proof = JSON.parse(data.slice(data.indexOf("|") + 1)) as { body: { requestId: string } };
    return { requestId: proof.body.requestId, kind: "proof", data };
  };
  const refusedSeen = async (): Promise<Seen> => {
    const data = (await refused404()).error!.data as string;
    return { requestId: (JSON.parse(data) as { requestId: string }).requestId, kind: "error", data };
  };
  /** A call whose subscriber, registered first, gets the outcome while the prover settles the id. */
  async function subscribedCall(headers: Record<string, string>) {
    const requestId = crypto.randomUUID();
    const event = firstEvent(proofUrl(requestId), PROOF_MS);
    expect(await eventually(subscribers, (n) => n >= 1, 10_000)).toBeGreaterThanOrEqual(1);
    const response = await fetch(`${prover.url}/proxy`, { headers: { "T-REQUEST-ID": requestId, "T-PROXY-URL": url("/data"), ...headers } });
    return { requestId, response, event: await event };
  }
  const subscribers = async () => sample(await scrapeMetrics(prover.url), "tlsproof_sse_subscribers") ?? 0;
  /** A pattern that matches nothing. */
  const unmatched = once(() => subscribedCall({ "T-REDACTED": "res:body:secret, res:body:no-such-key" }));
  /** A proof made while the prover's own SQLite file refuses new messages (a real storage failure). */
  const storageFailed = once(async () => {
    const db = new Database(join(dataDir, "messages.sqlite"));
    db.run("CREATE TRIGGER refuse_messages BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    try {
      const call = await subscribedCall({});
      const late = call.response.status === 200 ? await firstEvent(proofUrl(call.requestId), 10_000) : undefined;
      return { ...call, late };
    } finally {
      db.run("DROP TRIGGER refuse_messages");
      db.close();
    }
  });

  beforeAll(async () => {
    work = scratchDir("delivery");
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, ENV);
    dataDir = prover.dataDir;
  }, 120_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 120_000);

  test("GET /notaryinfo answers like Verity's prover: version, the notary's PEM key, the build's commit", async () => {
    const response = await fetch(`${prover.url}/notaryinfo`);
    expect(response.status).toBe(200);
    const info = (await response.json()) as Record<string, string>;
    // Verity's four fields, plus the address the notary's EVM attestations recover to.
    expect(Object.keys(info).sort()).toEqual(["ethereumAddress", "gitCommitHash", "gitCommitTimestamp", "notaries", "publicKey", "version"]);
    // The list of every notary's key (one here: the embedded notary), for clients pinning several.
    expect((info as unknown as { notaries: unknown }).notaries).toEqual([
      { publicKey: prover.notaryPubPem, signatureAlgorithm: "secp256k1", ethereumAddress: info.ethereumAddress, healthy: true },
    ]);
    expect(info.ethereumAddress).toMatch(/^0x[0-9a-f]{40}$/);
    expect(info.publicKey).toBe(prover.notaryPubPem);
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    // Run from source: no build, so no commit (the compiled binary carries both).
    expect([info.gitCommitHash, info.gitCommitTimestamp]).toEqual(["", ""]);
    expect((await fetch(`${prover.url}/info`)).status).toBe(200);
  });

  test(
    "an EventSource client gets the proof from onmessage as `<key>|<proof>`; the key is /notaryinfo's and cli verify accepts the proof",
    async () => {
      const result = await proved();
      expect(result.response.status).toBe(200);
      expect(result.error).toBeUndefined();
      const data = result.proofData!;
      const bar = data.indexOf("|");
      const [publicKey, proofText] = [data.slice(0, bar), data.slice(bar + 1)];
      const notaryInfo = (await (await fetch(`${prover.url}/notaryinfo`)).json()) as { publicKey: string };
      expect(publicKey).toBe(notaryInfo.publicKey);
      const proof = JSON.parse(proofText) as { body: { requestId: string } };

      const keyPath = join(work, "key-from-event.pem");
      const proofPath = join(work, "proof-from-event.json");
      writeFileSync(keyPath, publicKey);
      writeFileSync(proofPath, proofText);
      const verified = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", keyPath, "--proof", proofPath, "--json"]);
      expect(verified.exitCode).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, serverName: TARGET_HOST, requestId: proof.body.requestId });
    },
    PROOF_MS,
  );

  test(
    "a target answering 404 without T-PROVE-FAILED-REQ: settled before /proxy answers, so onerror follows at once, with the code readable",
    async () => {
      const result = await refused404();
      expect(result.response.status).toBe(404);
      expect(result.proofData).toBeUndefined();
      // An outcome is counted once recorded, before anyone is told: the answer came after it, so nothing (no MPC
      // step, no timeout) stands between the answer and the stream's event.
      const refusals = (metrics: PromMetrics) => sample(metrics, "tlsproof_proofs_total", { outcome: "target_request_failed" }) ?? 0;
      expect(refusals(result.metrics.atAnswer)).toBe(refusals(result.metrics.before) + 1);
      const failure = JSON.parse(result.error!.data as string) as { requestId: string; code: string };
      expect(failure.code).toBe("target_request_failed");
    },
    PROOF_MS,
  );

  test("an EventSource that does not close after the error is told not to come back (204), not left reconnecting", async () => {
    const { requestId: failedId } = await refusedSeen();
    const source = new EventSource(proofUrl(failedId));
    const errors: { data?: string; status?: number }[] = [];
    source.onerror = (event) => errors.push(event as unknown as { data?: string; status?: number });
    // The error event, the stream's end, then one reconnection (with Last-Event-ID) answered 204: EventSource gives up.
    expect(await eventually(() => source.readyState, (state) => state === EventSource.CLOSED, 20_000)).toBe(EventSource.CLOSED);
    expect(JSON.parse(errors[0]!.data!)).toMatchObject({ requestId: failedId, code: "target_request_failed" });
    expect(errors.at(-1)!.status).toBe(204);
    expect(errors).toHaveLength(3);
    const reconnect = await fetch(proofUrl(failedId), { headers: { "last-event-id": failedId } });
    expect(reconnect.status).toBe(204);
  }, PROOF_MS);

  test("late subscribers (retention 0: from the store) get the same outcomes; the ids cannot be used again", async () => {
    for (const { requestId, ...outcome } of [await provedSeen(), await refusedSeen()]) {
      const events = await allEvents(proofUrl(requestId), 10_000);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toBe(outcome.data);
      expect(events[0]!.event).toBe(outcome.kind === "proof" ? "message" : "error");
      expect(await errorCode(await proxy(requestId))).toEqual({ status: 400, code: "duplicate_request_id" });
    }
  }, PROOF_MS);

  test("a subscriber to an id no /proxy call uses gets unknown_request after the timeout, and the stream ends", async () => {
    const requestId = crypto.randomUUID();
    const started = Date.now();
    const events = await allEvents(proofUrl(requestId), 20_000);
    expect(events).toHaveLength(1);
    expect(errorData(events[0]!)).toMatchObject({ requestId, code: "unknown_request" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
  }, 30_000);

  test(
    "a pattern that matches nothing: the client gets its answer, the subscriber redaction_unmatched naming the entry by position, nothing is stored",
    async () => {
      const { requestId, response, event } = await unmatched();
      expect(response.status).toBe(200);
      expect(response.headers.get("t-proof-id")).toBeNull();
      expect(((await response.json()) as { user: { name: string } }).user.name).toBe("alice");
      const failure = errorData(event);
      expect(failure).toMatchObject({ requestId, code: "redaction_unmatched" });
      expect(failure.message).toContain("T-REDACTED entry 2 matched nothing");
      expect(failure.message).not.toContain("no-such-key");
      expect(await storedProofIds()).not.toContain(requestId);
      expect(await eventually(notarySessions, (n) => n === 0, 10_000)).toBe(0);
    },
    PROOF_MS,
  );

  test(
    "a proof that cannot be stored is not delivered: the id settles with storage_failed, for live and late subscribers",
    async () => {
      const { requestId, response, event: live, late } = await storageFailed();
      expect(response.status).toBe(200);
      expect(errorData(live)).toMatchObject({ requestId, code: "storage_failed" });
      expect(late?.data).toBe(live.data);
    },
    PROOF_MS,
  );

  test(
    "after a restart (same data folder) every outcome is still delivered and every id still refused",
    async () => {
      const settled = ({ requestId, event }: { requestId: string; event: { data: string } }): Seen => ({ requestId, kind: "error", data: event.data });
      const seen = [await provedSeen(), await refusedSeen(), await settled(await unmatched()), settled(await storageFailed())];
      expect(await prover.stop()).toBe(0);
      prover = await startProver(SOURCE_CLI, target.port!, { ...ENV, PROVER_DATA_DIR: dataDir });
      for (const { requestId, ...outcome } of seen) {
        const event = await firstEvent(proofUrl(requestId), 10_000);
        expect(event.data).toBe(outcome.data);
        expect(await errorCode(await proxy(requestId))).toEqual({ status: 400, code: "duplicate_request_id" });
      }
      expect(proofData(await firstEvent(proofUrl(seen[0]!.requestId), 10_000)).publicKey).toBe(prover.notaryPubPem);
    },
    PROOF_MS * 2,
  );

  test(
    "an id in flight when the prover is killed settles as failed at the next start (not pending for ever)",
    async () => {
      const requestId = crypto.randomUUID();
      // The target holds its answer: the proof is still running when the prover is killed.
      const call = proxy(requestId, "/slow?ms=60000").catch((error: unknown) => error);
      expect(await eventually(notarySessions, (n) => n === 1, 30_000)).toBe(1);
      prover.process.kill("SIGKILL");
      await prover.process.exited;
      expect(await call).toBeInstanceOf(Error);
      prover = await startProver(SOURCE_CLI, target.port!, { ...ENV, PROVER_DATA_DIR: dataDir });
      const events = await allEvents(proofUrl(requestId), 10_000);
      expect(events).toHaveLength(1);
      expect(errorData(events[0]!)).toMatchObject({ requestId, code: "session_failed" });
      expect(await errorCode(await proxy(requestId))).toEqual({ status: 400, code: "duplicate_request_id" });
    },
    120_000,
  );

  test(
    "a /proxy call whose target answers after the idle limit is answered and proven: its connection is not cut, its id not used twice",
    async () => {
      // Bun sweeps idle sockets in 4 s ticks: 9 s of silence outlasts the 3 s limit at any phase of the sweep. A
      // cut connection would make fetch send the call again (duplicate_request_id) or fail.
      const requestId = crypto.randomUUID();
      const event = firstEvent(proofUrl(requestId), PROOF_MS);
      const response = await proxy(requestId, "/slow?ms=9000");
      expect(response.status).toBe(200);
      expect(((await response.json()) as { user: { name: string } }).user.name).toBe("alice");
      expect(proofData(await event).publicKey).toBe(prover.notaryPubPem);
    },
    PROOF_MS,
  );

  test("a client sending its body slowly is cut by the idle limit (no proof has started)", async () => {
    const { port, hostname } = new URL(prover.url);
    let closed!: () => void;
    const cut = new Promise<void>((resolve) => (closed = resolve));
    let answer = "";
    const socket = await Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        data: (_, chunk) => {
          answer += chunk.toString();
        },
        close: () => closed(),
        error: () => closed(),
      },
    });
    socket.write(
      `POST /proxy HTTP/1.1\r\nhost: ${hostname}\r\nt-proxy-url: ${url("/echo")}\r\nt-request-id: ${crypto.randomUUID()}\r\n` +
        `content-type: application/json\r\ncontent-length: 100\r\n\r\n{"slow":`,
    );
    // Cut by the 3 s idle limit without an answer (a refusal by the app would answer). Bun sweeps idle sockets
    // in 4 s ticks (seen here 2.4 s and 4.0 s after the last byte); 20 s only tells "cut" from "kept for ever".
    expect(await Promise.race([cut.then(() => "cut"), Bun.sleep(20_000).then(() => "still open")])).toBe("cut");
    expect(answer).toBe("");
    expect(await notarySessions()).toBe(0);
    // The prover logs the cut as the client's, not as a failure of its own.
    await waitUntil("the prover to log the cut request", () => prover.log(), (log) => log.includes("connection closed before its request was read"), 10_000);
    expect(prover.log()).not.toContain("unhandled error");
  }, 30_000);

  test(
    "a keep-alive connection is idle-limited again once its /proxy answer or its proof stream is over",
    async () => {
      // Both requests lift the idle limit while they wait; a limit left lifted would keep the connection for ever.
      const [proxied, streamed] = await Promise.all([
        keepAliveExchange(prover.url, "/proxy", { headers: { "t-proxy-url": url("/data"), "t-request-id": crypto.randomUUID() } }),
        keepAliveExchange(prover.url, `/proof/${crypto.randomUUID()}`),
      ]);
      expect(proxied.head).toStartWith("HTTP/1.1 200");
      expect(streamed.head).toStartWith("HTTP/1.1 200");
      expect(streamed.body).toContain("unknown_request");
      // Bun counts the limit in 4 s ticks from the request's last read: the cut comes at the next tick or after.
      // Closed within the helper's 15 s wait tells a limit in force from one left lifted.
      expect([proxied.msIdleBeforeClose, streamed.msIdleBeforeClose].filter((ms) => !Number.isFinite(ms))).toEqual([]);
    },
    PROOF_MS,
  );
});
