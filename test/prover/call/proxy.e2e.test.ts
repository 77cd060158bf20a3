import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server as TlsServer } from "node:tls";
import { TEST_SESSION, scratchDir, tlsFixture } from "../../../testkit/env.ts";
import { scrapeMetrics, sample } from "../../../testkit/metrics.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../testkit/prover.ts";
import { errorData, firstEvent, openStream, proofData } from "../../../testkit/sse.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../../testkit/scripted-target.ts";
import { startTarget, startTls13OnlyTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { eventually } from "../../../testkit/wait.ts";

interface ErrorBody {
  error: { code: string; message: string };
}

describe("/proxy answers and failures", () => {
  let target: Server<undefined>;
  let tls13: { server: TlsServer; port: number };
  let prover: RunningProver;
  /** A TLS 1.2 target (the engine's) whose answer starts with an interim head; its final head has a field in UTF-8. */
  let hinting: ScriptedTarget;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    tls13 = await startTls13OnlyTarget(tlsFixture());
    hinting = await startScriptedTarget(tlsFixture(), { version: "TLSv1.2" }, ({ socket }) => {
      socket.end('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename="€ café.txt"\r\nContent-Length: 2\r\n\r\nok');
    });
    prover = await startProver(SOURCE_CLI, target.port!, {
      PROVER_RESOLVE: `${TARGET_HOST}:${target.port}:127.0.0.1,tls13.${TARGET_HOST}:${tls13.port}:127.0.0.1,${TARGET_HOST}:${hinting.port}:127.0.0.1`,
    });
  }, 120_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
    tls13?.server.close();
    hinting?.stop();
  }, 120_000);

  const proxy = (headers: Record<string, string>, init: RequestInit = {}) =>
    fetch(`${prover.url}/proxy`, { ...init, headers: { "T-REQUEST-ID": crypto.randomUUID(), ...headers } });
  const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;

  async function expectError(response: Response, status: number, code: string): Promise<string> {
    const body = (await response.json()) as ErrorBody;
    expect({ status: response.status, code: body.error.code }).toEqual({ status, code });
    expect(body.error.message.length).toBeGreaterThan(0);
    return body.error.message;
  }

  test("bad input is a 400 with a code, before anything is sent", async () => {
    const sessionsCreated = async () => sample(await scrapeMetrics(prover.url), "tlsproof_notary_sessions_created_total");
    const created = await sessionsCreated();
    expect(created).toBeNumber();
    await expectError(await proxy({}), 400, "invalid_header");
    await expectError(await proxy({ "T-PROXY-URL": "http://example.com/" }), 400, "invalid_header");
    await expectError(await proxy({ "T-PROXY-URL": "not a url" }), 400, "invalid_header");
    await expectError(await proxy({ "T-PROXY-URL": url("/data"), "T-REQUEST-ID": "42" }), 400, "invalid_request_id");
    await expectError(await proxy({ "T-PROXY-URL": url("/data"), "T-REDACTED": "res:body:x,bogus:thing" }), 400, "invalid_redaction");
    await expectError(await proxy({ "T-PROXY-URL": url("/data"), "T-REDACTED": "res:path:0" }), 400, "invalid_redaction");
    await expectError(await proxy({ "T-PROXY-URL": url("/data"), "T-PROVE-FAILED-REQ": "maybe" }), 400, "invalid_header");
    await expectError(await proxy({ "T-PROXY-URL": url("/data") }, { method: "PATCH" }), 400, "unsupported_method");
    await expectError(
      await proxy({ "T-PROXY-URL": url("/data"), "content-type": "application/json" }, { method: "POST", body: "{not json" }),
      400,
      "invalid_body",
    );
    // No notary session was opened for any of them (the embedded notary counts every session it creates).
    expect(await sessionsCreated()).toBe(created!);
  });

  test("an unresolvable host is a 502, its subscribers get the error, and the id cannot be reused", async () => {
    const requestId = crypto.randomUUID();
    const event = firstEvent(`${prover.url}/proof/${requestId}`, 30_000);
    // Subscribed before the call: the error reaches a live subscriber.
    const subscribers = async () => sample(await scrapeMetrics(prover.url), "tlsproof_sse_subscribers");
    expect(await eventually(subscribers, (n) => n === 1, 10_000)).toBe(1);
    const headers = { "T-PROXY-URL": "https://no-such-host.invalid/", "T-REQUEST-ID": requestId };
    await expectError(await proxy(headers), 502, "target_unresolvable");
    expect(errorData(await event)).toMatchObject({ requestId, code: "target_unresolvable" });
    await expectError(await proxy(headers), 400, "duplicate_request_id");
  });

  test("an id used before, in either mode: 400 duplicate_request_id, the target never gets the request, and the notary session opened meanwhile is released", async () => {
    // The id's claim is written while the proof's setup runs: the request waits for it, not the setup.
    const count = async (requestId: string, mode: string) => {
      const response = await proxy({ "T-PROXY-URL": url("/counter"), "T-REQUEST-ID": requestId, "T-PROOF-MODE": mode });
      return { status: response.status, body: (await response.json()) as { count?: number; error?: { code: string; message: string } } };
    };
    const requestId = crypto.randomUUID();
    const first = await count(requestId, "proxy");
    expect(first.status).toBe(200);
    for (const mode of ["proxy", "mpc", "proxy"]) {
      expect(await count(requestId, mode)).toEqual({ status: 400, body: { error: { code: "duplicate_request_id", message: expect.any(String) } } });
    }
    // The target counted none of the refused calls.
    expect((await count(crypto.randomUUID(), "proxy")).body.count).toBe(first.body.count! + 1);
    const active = async () => sample(await scrapeMetrics(prover.url), "tlsproof_notary_active_sessions");
    expect(await eventually(active, (n) => n === 0, 10_000)).toBe(0);
  });

  test("request ids are case-blind: one id in any case is one id, folded to lower case", async () => {
    const requestId = crypto.randomUUID();
    // Subscribed in upper case before the request (its first comment came), told the outcome of the lower-case id.
    const stream = await openStream(`${prover.url}/proof/${requestId.toUpperCase()}`, 30_000);
    await expectError(await proxy({ "T-PROXY-URL": "https://no-such-host.invalid/", "T-REQUEST-ID": requestId }), 502, "target_unresolvable");
    expect(errorData((await stream.events)[0]!)).toMatchObject({ requestId, code: "target_unresolvable" });
    // The same id in upper case is a reuse, not a new request.
    const reuse = { "T-PROXY-URL": "https://no-such-host.invalid/", "T-REQUEST-ID": ` ${requestId.toUpperCase()} ` };
    await expectError(await proxy(reuse), 400, "duplicate_request_id");
  });

  test("a proof subscription with a non-UUID id is a 400", async () => {
    const response = await fetch(`${prover.url}/proof/not-a-uuid`);
    await expectError(response, 400, "invalid_request_id");
  });

  test("a target answering 404 is passed through without a proof unless asked", async () => {
    const requestId = crypto.randomUUID();
    const event = firstEvent(`${prover.url}/proof/${requestId}`, 240_000);
    // Whether a failed answer is proven is the call's rule, the same in every mode: proxy mode's proofs are quick.
    const response = await proxy({ "T-PROXY-URL": url("/status/404"), "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ status: 404 });
    expect(response.headers.get("t-proof-id")).toBeNull();
    expect(errorData(await event)).toMatchObject({ requestId, code: "target_request_failed" });
  }, 240_000);

  test("with T-PROVE-FAILED-REQ the target's real 404 is proven, and cli verify accepts the proof", async () => {
    const requestId = crypto.randomUUID();
    const response = await proxy({ "T-PROXY-URL": url("/status/404"), "T-REQUEST-ID": requestId, "T-PROVE-FAILED-REQ": "true", "T-PROOF-MODE": "proxy" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ status: 404 });
    expect(response.headers.get("t-proof-id")).toBe(requestId);
    const { proofText } = proofData(await firstEvent(`${prover.url}/proof/${requestId}`, 120_000));
    const proofPath = join(scratchDir("proxy"), "failed-answer.json");
    writeFileSync(proofPath, proofText);
    const verified = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--json"]);
    expect(verified.stderr).toBe("");
    expect(verified.exitCode).toBe(0);
    const body = JSON.parse(verified.stdout) as { valid: boolean; requestId: string; sent: { text: string }; recv: { text: string } };
    expect(body).toMatchObject({ valid: true, requestId });
    expect(body.sent.text).toStartWith("GET /status/404 HTTP/1.1\r\n");
    expect(body.recv.text).toStartWith("HTTP/1.1 404 ");
    expect(body.recv.text).toEndWith('{"status":404}');
  }, 240_000);

  test("MPC: 103 Early Hints, then an answer with a field in UTF-8: the client gets the answer's own status and fields byte for byte; the proof stream says an interim answer is not proven", async () => {
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 240_000);
    const response = await proxy({ "T-PROXY-URL": `https://${TARGET_HOST}:${hinting.port}/`, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "mpc" });
    expect({ status: response.status, body: await response.text(), link: response.headers.get("link"), mode: response.headers.get("t-proof-mode") }).toEqual({
      status: 200,
      body: "ok",
      link: null,
      mode: "mpc",
    });
    // Header values travel as bytes, read one char per byte (a ByteString), as the target wrote them.
    expect(Buffer.from(response.headers.get("content-disposition")!, "latin1").toString("utf8")).toBe('attachment; filename="€ café.txt"');
    const [event] = await stream.events;
    expect(errorData(event!)).toMatchObject({ requestId, code: "answer_not_single", message: expect.stringContaining("it is an interim answer (status 103)") });
  }, 240_000);

  test("a response larger than the session allows is a 502 that says so", async () => {
    const response = await proxy({ "T-PROXY-URL": url(`/big?bytes=${TEST_SESSION.maxRecvData * 2}`) });
    const message = await expectError(response, 502, "response_too_large");
    expect(message).toContain(String(TEST_SESSION.maxRecvData));
  }, 240_000);

  test("a target without TLS 1.2 is a 502 that names what the engine needs and proxy mode, before any MPC session", async () => {
    const sessionsBefore = prover.log().match(/session created/g)?.length ?? 0;
    const response = await proxy({ "T-PROXY-URL": `https://tls13.${TARGET_HOST}:${tls13.port}/` });
    const message = await expectError(response, 502, "tls_unsupported");
    expect(message).toContain("TLS 1.2");
    expect(message).toContain("T-PROOF-MODE: proxy");
    // The probe refused it: no notary session was opened for it.
    expect(prover.log().match(/session created/g)?.length ?? 0).toBe(sessionsBefore);
  }, 240_000);
});
