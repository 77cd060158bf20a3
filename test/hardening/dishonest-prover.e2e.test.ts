import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { BUN } from "../../testkit/prover.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { startTarget } from "../../testkit/target.ts";
import { makeUntrustedIdentities } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";
import { type RunningNotary, notaryConfig, notarySessions, startNotary } from "../../testkit/notary.ts";

/**
 * The notary signs only what it verified: a real `cli notary start` and a prover process that runs a real MPC
 * session, reveals every byte, and then declares the response's secret value hidden (dishonest-prover.ts).
 * The notary must refuse to sign, so no proof can claim a value was hidden that its readers can see.
 */
let notary: RunningNotary;
let target: Server<undefined>;
/** A target whose certificate, from the trusted test CA, expired. */
let expired: Server<undefined>;
/** A target whose answer stops mid-body: its head says 42 bytes, 20 come, then its TCP connection ends. */
let cutting: ScriptedTarget;
const CUT_BODY = '{"transfers":[{"to":"bob","amount":5000}]}';

beforeAll(async () => {
  notary = await startNotary(notaryConfig("host: 127.0.0.1\nport: 0\nnotarization:\n  max_sent_data: 1024\n  max_recv_data: 2048\n"));
  target = startTarget(tlsFixture());
  const { expired: identity } = makeUntrustedIdentities(tlsFixture());
  expired = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: identity.chainPem, key: identity.leafKeyPem }, fetch: () => Response.json({ secret: "never" }) });
  cutting = await startScriptedTarget(tlsFixture(), { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, ({ socket }) => {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${CUT_BODY.length}\r\n\r\n${CUT_BODY.slice(0, 20)}`, () => socket.destroy());
  });
}, 90_000);

afterAll(() => {
  notary?.process.kill("SIGKILL");
  target?.stop(true);
  expired?.stop(true);
  cutting?.stop();
});

interface LieOutcome {
  signed?: boolean;
  code?: string;
  message?: string;
  /** The engine's own failure of the exchange. */
  engine?: string;
  connectionTime?: number;
  responseTime?: number;
  requestStartedAt?: number;
}

/** Runs dishonest-prover.ts with this lie: the notary's answer to its attestation request. */
async function lieToNotary(lie: "hidden-secret" | "hidden-host" | "cut" | "warm" | "revealed-after-hidden" | "untrusted"): Promise<LieOutcome> {
  const port = lie === "cut" ? cutting.port : lie === "untrusted" ? expired.port! : target.port!;
  const liar = Bun.spawn([BUN, join(import.meta.dir, "dishonest-prover.ts"), notary.url, String(port), tlsFixture().caPath, lie], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(liar.stdout).text(), new Response(liar.stderr).text(), liar.exited]);
  expect({ exitCode, stderr: exitCode === 0 ? "" : stderr }).toEqual({ exitCode: 0, stderr: "" });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as LieOutcome;
}

test("a declared hidden span that was in fact revealed is refused, and nothing is signed", async () => {
  const outcome = await lieToNotary("hidden-secret");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.message).toContain("declared redactions refused");
  expect(outcome.message).toMatch(/declared hidden, but recv bytes \d+\.\.\d+ are revealed/);
  expect(notary.log()).toContain("session verified");
  expect(notary.log()).not.toContain("proof signed");
  expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
}, 240_000);

test("a request whose Host is hidden is refused: a reader could not tell which server it asked", async () => {
  const outcome = await lieToNotary("hidden-host");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.message).toContain("request refused: the request's Host header value is hidden");
  expect(notary.log()).not.toContain("proof signed");
  expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
}, 240_000);

test("MPC mode's request rule: a header value hidden with revealed header bytes after it is refused (422 request_unproven)", async () => {
  const outcome = await lieToNotary("revealed-after-hidden");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.code).toBe("request_unproven");
  expect(outcome.message).toMatch(/after a hidden span|before the end of the Host header/);
  expect(notary.log()).not.toContain("proof signed");
  expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
}, 240_000);

test("a transcript ended before its answer did gets no proof: the engine fails the exchange, or the notary refuses it", async () => {
  const outcome = await lieToNotary("cut");
  console.log(`MPC cut-off answer: ${JSON.stringify(outcome)}`);
  expect(outcome.signed).toBeUndefined();
  if (outcome.engine === undefined) expect(outcome.code).toBe("answer_incomplete");
  expect(notary.log()).not.toContain("proof signed");
}, 240_000);

test("the engine itself refuses a certificate the prover's pre-check would have: skipping the check proves nothing", async () => {
  const outcome = await lieToNotary("untrusted");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.engine).toBe("the target's certificate was not trusted: it is outside its validity period; no proof is made");
  expect(notary.log()).not.toContain("proof signed");
}, 240_000);

test("a warm session's proof is dated by its exchange, not by its setup", async () => {
  const outcome = await lieToNotary("warm");
  console.log(`MPC warm session: ${JSON.stringify({ ...outcome, recv: undefined })}; notary: ${/session verified.*/.exec(notary.log())?.[0]}`);
  expect(outcome.signed).toBe(true);
  // The session waited 12 s between its setup and its request; the proof's time is the request's, as the notary saw it.
  expect(outcome.connectionTime!).toBeGreaterThanOrEqual(Math.floor(outcome.requestStartedAt! / 1000));
  expect(outcome.responseTime!).toBeGreaterThanOrEqual(outcome.connectionTime!);
}, 240_000);
