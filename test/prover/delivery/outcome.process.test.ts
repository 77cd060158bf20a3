/**
 * `GET /proof/{requestId}/outcome` through `cli prover start` (proxy mode, a target that holds its answer until the
 * test releases it): a request id's state as JSON, at once: unknown, pending while the exchange runs, then the proof
 * (which verifies) or why none came; a scoped key reads only its own ids.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { verifyProof } from "../../../src/proof/verify.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../testkit/prover.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../../testkit/scripted-target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { eventually } from "../../../testkit/wait.ts";

const KEY = "outcome-test-key-93a1";
const SCOPED = "outcome-scoped-key-51c7";
const ANSWER = '{"balance":42}';
let target: ScriptedTarget;
let prover: RunningProver;
let held = 0;

beforeAll(async () => {
  target = await startScriptedTarget(tlsFixture(), { version: "TLSv1.3" }, async ({ socket, request, released }) => {
    const status = request.startsWith("GET /missing") ? "404 Not Found" : "200 OK";
    held += 1;
    await released;
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\n\r\n${ANSWER}`);
  });
  prover = await startProver(SOURCE_CLI, target.port, { PROVER_PROOF_MODE: "proxy", PROVER_API_KEYS: KEY, PROVER_API_KEYS_SCOPED: SCOPED });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  target?.stop();
});

const auth = (key = KEY) => ({ authorization: `Bearer ${key}` });
const outcome = async (requestId: string, key = KEY) => {
  const response = await fetch(`${prover.url}/proof/${requestId}/outcome`, { headers: auth(key) });
  return { status: response.status, body: (await response.json()) as { requestId?: string; state?: string; proof?: unknown; error?: { code: string; message: string } } };
};
const proxy = (requestId: string, path: string) =>
  fetch(`${prover.url}/proxy`, { headers: { ...auth(), "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}${path}`, "T-REQUEST-ID": requestId } });

test("unknown, then pending while the exchange runs, then the proof, which verifies", async () => {
  const requestId = crypto.randomUUID();
  expect(await outcome(requestId)).toEqual({ status: 200, body: { requestId, state: "unknown" } });
  const before = held;
  const answer = proxy(requestId, "/balance");
  await eventually(() => held, (n) => n > before, 30_000);
  expect((await outcome(requestId)).body).toEqual({ requestId, state: "pending" });
  target.release();
  expect((await answer).status).toBe(200);
  const settled = await eventually(() => outcome(requestId), (o) => o.body.state !== "pending", 30_000);
  expect(settled.body.state).toBe("proof");
  expect(verifyProof(settled.body.proof, prover.notaryPubPem, { requestId, allowTestTrustAnchor: true }).body.serverName).toBe(TARGET_HOST);
}, 60_000);

test("why no proof came; a scoped key reads only its own ids; a malformed id is a 400", async () => {
  const requestId = crypto.randomUUID();
  const before = held;
  const answer = proxy(requestId, "/missing");
  await eventually(() => held, (n) => n > before, 30_000);
  target.release();
  expect((await answer).status).toBe(404);
  const settled = await eventually(() => outcome(requestId), (o) => o.body.state !== "pending", 30_000);
  expect(settled.body).toMatchObject({ requestId, state: "error", error: { code: "target_request_failed" } });
  expect(settled.body.proof).toBeUndefined();
  const scoped = await outcome(requestId, SCOPED);
  expect(scoped.status).toBe(403);
  expect((await fetch(`${prover.url}/proof/${requestId}/outcome`)).status).toBe(401);
  expect((await outcome("not-a-uuid")).status).toBe(400);
}, 60_000);
