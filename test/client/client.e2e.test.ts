import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { generateKey } from "../../src/proof/keys.ts";
import { type ProveResult, TlsproofError, prove, redact, verifyProof } from "../../src/client/index.ts";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { scrapeMetrics, sample } from "../../testkit/metrics.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { type SseEvent, allEvents, errorData } from "../../testkit/sse.ts";
import { SECRET_HEADER, SECRET_HEADER_VALUE, SECRET_VALUE, startTarget } from "../../testkit/target.ts";
import { withEvmAttestationChanged, withTranscriptByteChanged } from "../../testkit/tamper.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";

/**
 * The client library against a real `cli prover start` (embedded notary, the local TLS target). Its proofs are
 * proxy mode's: what the client does with a proof, a failure or a relay's altered answer is the same in every mode,
 * and MPC sessions are tested where they are the subject (test/prover/, test/engine/, test/cli/).
 */
const CALL_MS = 240_000;
const API_KEY = "client-test-key";
/** A redacted value the proof must not hold: with letters outside hex, so that no signature or digest can hold it by chance ("9999" once did). */
const PIN = "pin-4471-zq";
let target: Server<undefined>;
let prover: RunningProver;
let targetBase: string;

beforeAll(async () => {
  target = startTarget(tlsFixture());
  targetBase = `https://${TARGET_HOST}:${target.port}`;
  prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_API_KEYS: API_KEY,
    // One proof subscriber at a time, and unknown ids given up after 2 s: a held subscription makes the
    // prover answer 503 once, then frees itself before the Retry-After (5 s) has passed.
    PROVER_SSE_TOTAL: "1",
    PROVER_UNKNOWN_REQUEST_TIMEOUT: "2s",
  });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  target?.stop(true);
}, 120_000);

const options = () => ({ prover: prover.url, apiKey: API_KEY, notaryKeys: [prover.notaryPubPem], allowTestTrustAnchor: true });

/**
 * Takes the prover's only subscriber place with a subscription to an id nobody uses (it ends by itself with
 * unknown_request after 2 s) and resolves once the prover refuses the next subscriber.
 */
async function holdOnlySubscriberPlace(): Promise<{ held: Promise<SseEvent[]> }> {
  const auth = { authorization: `Bearer ${API_KEY}` };
  const held = allEvents(`${prover.url}/proof/${crypto.randomUUID()}`, 30_000, { headers: auth });
  const probe = async () => {
    const response = await fetch(`${prover.url}/proof/${crypto.randomUUID()}`, { headers: auth });
    await response.body?.cancel();
    return response.status;
  };
  expect(await eventually(probe, (status) => status === 503, 10_000)).toBe(503);
  return { held };
}

/** A fetch the client made while recorded: its URL, method and the status it got. */
interface SeenFetch {
  url: string;
  method: string;
  status: number;
}

/**
 * Runs `work` with the global fetch (the one the client library calls) wrapped to record every call it makes
 * and the status each got; the calls themselves go out unchanged.
 */
async function recordingFetches<T>(work: () => Promise<T>): Promise<{ value: T; seen: SeenFetch[] }> {
  const real = globalThis.fetch;
  const seen: SeenFetch[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await real(input, init);
    const url = input instanceof Request ? input.url : String(input);
    seen.push({ url, method: init?.method ?? (input instanceof Request ? input.method : "GET"), status: response.status });
    return response;
  };
  globalThis.fetch = Object.assign(recording, { preconnect: real.preconnect });
  try {
    return { value: await work(), seen };
  } finally {
    globalThis.fetch = real;
  }
}

async function rejection(promise: Promise<unknown>): Promise<TlsproofError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TlsproofError);
    return error as TlsproofError;
  }
  throw new Error("expected the call to fail");
}

/** The first proof, for the relay below to replay. */
let genuine: ProveResult;

describe("prove() against a real prover", () => {
  let result: ProveResult;
  let held: Promise<SseEvent[]>;
  let seen: SeenFetch[];

  beforeAll(async () => {
    // Holds the prover's only subscriber place, so prove()'s first subscription is refused with 503.
    ({ held } = await holdOnlySubscriberPlace());
    ({ value: result, seen } = await recordingFetches(() =>
      prove({
        ...options(),
        url: `${targetBase}/data?user=42`,
        method: "POST",
        body: { account: "acct-7", pin: PIN },
        redact: [redact.requestBody(), redact.requestBody("pin"), redact.responseBody("secret"), redact.responseHeader(SECRET_HEADER)],
        mode: "proxy",
        timeoutMs: CALL_MS,
      }),
    ));
    genuine = result;
  }, CALL_MS);

  test("a full subscriber list is a 503 the client waits out and retries", async () => {
    const [event] = await held;
    expect(errorData(event!).code).toBe("unknown_request");
    // The first attempt's subscription was refused before its /proxy call; the retry, with a fresh id, went through.
    const calls = seen.map(({ url, method, status }) => ({ path: new URL(url).pathname, method, status }));
    expect(calls).toEqual([
      { path: expect.stringMatching(/^\/proof\//), method: "GET", status: 503 },
      { path: `/proof/${result.requestId}`, method: "GET", status: 200 },
      { path: "/proxy", method: "POST", status: 200 },
    ]);
    expect(calls[0]!.path).not.toBe(calls[1]!.path);
    expect(result.proof.body.requestId).toBe(result.requestId);
  });

  test("returns the target's answer and a proof that verifies with the pinned key", () => {
    // prove() verified it itself: the pinned key, its own request id, the URL's host.
    expect(result.verified.body.requestId).toBe(result.requestId);
    expect(result.verified.body.serverName).toBe(TARGET_HOST);
    expect(result.verified.testTrustAnchor).toBe(true);
    expect(result.response.status).toBe(200);
    expect(result.response.json<{ secret: string }>().secret).toBe(SECRET_VALUE);
    expect(result.response.headers.get("t-proof-id")).toBe(result.requestId);
    expect(result.notaryPublicKey).toBe(prover.notaryPubPem);
    const verified = verifyProof(result.proofText, [prover.notaryPubPem], { allowTestTrustAnchor: true });
    expect(verified.body.serverName).toBe(TARGET_HOST);
    expect(verified.sent.text).toStartWith("POST /data?user=42 HTTP/1.1");
    expect(verified.recv.text).toContain('"user":{"id":1000,"name":"alice"}');
  });

  test("the redacted values are hidden in the proof, each redaction listed", () => {
    const verified = verifyProof(result.proof, prover.notaryPubPem, { allowTestTrustAnchor: true });
    for (const secret of ["acct-7", PIN, SECRET_VALUE, SECRET_HEADER_VALUE]) {
      expect(result.proofText).not.toContain(secret);
      expect(verified.sent.text + verified.recv.text).not.toContain(secret);
    }
    expect(verified.recv.text).toContain(`"secret":${"█".repeat(SECRET_VALUE.length + 2)}`);
    const patterns = verified.body.redactions.map(({ pattern, matched }) => `${pattern}=${matched}`);
    expect(patterns).toEqual(expect.arrayContaining(["req:body:=true", "req:body:pin=true", "res:body:secret=true", `res:header:${SECRET_HEADER}=true`]));
    expect(verified.sent.text).toEndWith(`\r\n\r\n${"█".repeat(JSON.stringify({ account: "acct-7", pin: PIN }).length)}`);
  });

  test("cli verify accepts the proof text as delivered to the client", async () => {
    const path = join(scratchDir("client-proof"), "proof.json");
    writeFileSync(path, result.proofText);
    const { exitCode, stdout } = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", path]);
    expect(exitCode).toBe(0);
    expect(stdout).toContain(`Request id:   ${result.requestId}`);
  });

  test("the prover's metrics count the proof, and its embedded notary's the signing", async () => {
    const metrics = await scrapeMetrics(prover.url, { authorization: `Bearer ${API_KEY}` });
    const value = (name: string, labels: Record<string, string> = {}) => sample(metrics, name, labels);
    expect(value("tlsproof_proofs_total", { outcome: "proof" })).toBe(1);
    expect(value("tlsproof_proxy_duration_seconds", { mode: "proxy", result: "answered" })).toBe(1);
    expect(value("tlsproof_notary_attestations_total", { result: "signed" })).toBe(1);
    expect(value("tlsproof_notary_signing_duration_seconds")).toBe(1);
  });

  test("a tampered proof (server name, one transcript byte, the EVM attestation) or another notary's key is proof_invalid", () => {
    const tampered = result.proofText.replace('"serverName":"', '"serverName":"x');
    expect(() => verifyProof(tampered, prover.notaryPubPem)).toThrow(/signature does not match/);
    for (const changed of [withTranscriptByteChanged(result.proofText), withEvmAttestationChanged(result.proofText)]) {
      expect(() => verifyProof(changed, prover.notaryPubPem)).toThrow(/signature does not match/);
    }
    const otherKey = generateKey("secp256k1").publicKeyPem;
    let error: unknown;
    try {
      verifyProof(result.proofText, [otherKey]);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TlsproofError);
    expect((error as TlsproofError).code).toBe("proof_invalid");
    expect((error as TlsproofError).message).toContain("signed by a different notary key");
    // Among several pinned keys, the one that signed makes it valid.
    expect(verifyProof(result.proofText, [otherKey, prover.notaryPubPem], { allowTestTrustAnchor: true }).body.requestId).toBe(result.requestId);
  });
});

describe("prove() failures carry the prover's codes", () => {
  test("a target answering 404 without proveFailed: target_request_failed with the target's response", async () => {
    // The target's failure is the call's, the same in every mode: proxy mode's is quick.
    const error = await rejection(prove({ ...options(), url: `${targetBase}/status/404`, mode: "proxy", timeoutMs: CALL_MS }));
    expect(error.code).toBe("target_request_failed");
    expect(error.details.response?.status).toBe(404);
    expect(error.details.response?.json()).toEqual({ status: 404 });
  }, CALL_MS);

  test("a host that does not resolve: target_unresolvable, before any session", async () => {
    const error = await rejection(prove({ ...options(), url: "https://unknown.tlsproof.test/data" }));
    expect(error.code).toBe("target_unresolvable");
    expect(error.details.status).toBe(502);
  });

  test("a wrong API key: forbidden", async () => {
    const error = await rejection(prove({ ...options(), apiKey: "wrong", url: `${targetBase}/data` }));
    expect(error.code).toBe("forbidden");
  });

  test("a full prover with no retries left: over_capacity with its Retry-After", async () => {
    const { held } = await holdOnlySubscriberPlace();
    const error = await rejection(prove({ ...options(), url: `${targetBase}/data`, retries: 0 }));
    expect(error.code).toBe("over_capacity");
    expect(error.details.status).toBe(503);
    expect(error.details.retryAfterS).toBe(5);
    await held;
  });

  test("a deadline that passes: timeout", async () => {
    const error = await rejection(prove({ ...options(), url: `${targetBase}/data`, timeoutMs: 1 }));
    expect(error.code).toBe("timeout");
  });

  test("a redaction the prover would read differently is refused before anything is sent", async () => {
    const error = await rejection(prove({ ...options(), url: `${targetBase}/data`, redact: [redact.search(" padded ")] }));
    expect(error.code).toBe("invalid_redaction");
    expect(error.message).not.toContain("padded");
  });
});

/** An SSE event as the prover writes one: each line of its data on a `data:` line. */
const sseEvent = (data: string): string => `${data.split("\n").map((line) => `data: ${line}`).join("\n")}\n\n`;

describe("a relay between the client and the prover (the link is plain HTTP) cannot pass off another answer", () => {
  let relay: Server<undefined> | undefined;
  afterAll(() => relay?.stop(true));

  /** A relay on its own port; `handle` answers each request the client sends it. */
  function startRelay(handle: (request: Request) => Response | Promise<Response>): string {
    relay?.stop(true);
    // No idle limit: an MPC session keeps /proxy silent for tens of seconds.
    relay = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: handle });
    return `http://127.0.0.1:${relay.port}`;
  }

  /** Forwards a request to the real prover unchanged. */
  const forward = async (request: Request): Promise<Response> => {
    const { pathname, search } = new URL(request.url);
    const body = request.method === "GET" ? undefined : await request.arrayBuffer();
    return fetch(`${prover.url}${pathname}${search}`, { method: request.method, headers: request.headers, body });
  };

  test("an old genuine proof of another request, with a made-up answer: proof_mismatch, no MPC needed", async () => {
    const url = startRelay((request) => {
      const { pathname } = new URL(request.url);
      if (pathname.startsWith("/proof/")) {
        return new Response(sseEvent(`${prover.notaryPubPem}|${genuine.proofText}`), { headers: { "content-type": "text/event-stream" } });
      }
      const id = request.headers.get("t-request-id") ?? "";
      return Response.json({ balance: 1_000_000 }, { headers: { "t-proof-id": id } });
    });
    const error = await rejection(prove({ ...options(), prover: url, url: `${targetBase}/data?user=42` }));
    expect(error.code).toBe("proof_mismatch");
    expect(error.message).toStartWith(`the proof is of request id ${genuine.requestId}, expected `);
  });

  test("the genuine proof of this very request with an altered answer: proof_mismatch naming the difference", async () => {
    // The keys come from the prover's /info here (the opt-in): they are checked all the same.
    const url = startRelay(async (request) => {
      const answer = await forward(request);
      if (new URL(request.url).pathname !== "/proxy") return answer;
      const text = (await answer.text()).replace('"name":"alice"', '"name":"mallory"');
      const headers = new Headers(answer.headers);
      headers.delete("content-length");
      return new Response(text, { status: answer.status, headers });
    });
    const error = await rejection(
      prove({ prover: url, apiKey: API_KEY, trustProverNotaryKeys: true, allowTestTrustAnchor: true, url: `${targetBase}/data?user=42`, mode: "proxy", timeoutMs: CALL_MS }),
    );
    expect(error.code).toBe("proof_mismatch");
    expect(error.message).toStartWith("the proof does not show the answer received: ");
    expect(error.details.response?.text()).toContain("mallory");
  }, CALL_MS);
});
