import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { Proof } from "../../src/proof/format.ts";
import type { VerifiedProofJson } from "../../src/proof/render.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../../testkit/notary.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type AttestationChoices, type MaliciousSession, type NotaryAnswer, openMaliciousSession } from "../../testkit/malicious-prover.ts";
import { verifyWithCli } from "../../testkit/prove.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * Claims at a standalone `cli notary start` in proxy mode, asked by a prover that speaks the notary's wire protocol
 * itself (testkit/malicious-prover.ts): the notary judges each claim on the answer it decrypted, so a prover that
 * lies about values, their places or their types, or hides what it asks the notary to state, gets a refusal or the
 * truth, never the statement it wanted.
 */
const KEY = "claims-notary-test-key-41d2";
const SALT = `0x${"5a".repeat(32)}`;
const RECIPIENT = "0x00000000000000000000000000000000000000b0";
const ACCOUNT = '{"name":"alice","balance":123456,"currency":"EUR"}';

const tls = tlsFixture();
let notary: KeyedNotary;
const targets: Record<string, ScriptedTarget> = {};

/** A TLS 1.3 target answering `body` (a JSON text), whole with a Content-Length, or split in `chunks`. */
function jsonTarget(body: string | string[]): Promise<ScriptedTarget> {
  return startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket }) => {
    const head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n";
    if (typeof body === "string") socket.end(`${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    else socket.end(`${head}Transfer-Encoding: chunked\r\n\r\n${body.map((chunk) => `${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`).join("")}0\r\n\r\n`);
  });
}

beforeAll(async () => {
  targets.account = await jsonTarget(ACCOUNT);
  targets.twice = await jsonTarget('{"balance":5,"balance":2000}');
  targets.text = await jsonTarget('{"balance":"2000"}');
  targets.split = await jsonTarget(['{"balance":12', '3456,"name":"al', 'ice"}']);
  targets.poor = await jsonTarget('{"balance":5}');
  const ports = Object.values(targets).map((target) => target.port);
  notary = await startKeyedNotary(KEY, [
    "host: 127.0.0.1",
    "port: 0",
    "notarization:",
    "  max_sent_data: 1024",
    "  max_recv_data: 2048",
    "  private_key_path: notary.key",
    ...proxyToLocalTargets(ports),
  ]);
}, 120_000);

afterAll(() => {
  notary?.notary.process.kill("SIGKILL");
  for (const target of Object.values(targets)) target.stop();
});

/** A whole exchange with `target` (GET /, read to its close), then the attestation asked with `choices`. */
async function exchange(target: ScriptedTarget, choices: (session: MaliciousSession) => AttestationChoices): Promise<NotaryAnswer> {
  const session = await openMaliciousSession({ notaryUrl: notary.notary.url, apiKey: KEY, serverName: TARGET_HOST, port: target.port, caPem: tls.caPem });
  session.send(`GET / HTTP/1.1\r\nHost: ${TARGET_HOST}:${target.port}\r\nConnection: close\r\n\r\n`);
  await session.relayClosed;
  return session.attest(choices(session));
}

/** The declared redaction hiding the first `needle` of the answer the session read. */
function hiding(session: MaliciousSession, needle: string) {
  const start = Buffer.from(session.received()).indexOf(needle);
  expect(start).toBeGreaterThan(0);
  return { pattern: "res:body:balance", spans: [{ direction: "recv" as const, start, end: start + needle.length }], matched: true };
}

const refusal = (answer: NotaryAnswer) => ({ status: answer.status, code: answer.body.error?.code, message: answer.body.error?.message ?? "" });

describe("a proxy-mode notary states claims on the answer it decrypted", () => {
  test("over a value the proof hides: a comparison, a value shown and a commitment; the recipient signed in; cli verify lists them", async () => {
    const answer = await exchange(targets.account!, (session) => ({
      redactions: [hiding(session, "123456")],
      claims: ["res:body:balance>1000", "res:body:name", "commit:res:body:balance", "res:body:currency==EUR"],
      claimSalt: SALT,
      recipient: RECIPIENT,
    }));
    expect(answer.status).toBe(200);
    const proof = answer.body as unknown as Proof;
    expect(JSON.stringify(proof)).not.toContain("123456");
    const commitment = `0x${Buffer.from(keccak_256(Buffer.concat([Buffer.from(SALT.slice(2), "hex"), Buffer.from("123456")]))).toString("hex")}`;
    expect(proof.body.claims).toEqual([
      { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
      { kind: "value", subject: "res:body:name", value: '"alice"' },
      { kind: "commitment", subject: "res:body:balance", commitment },
      { kind: "predicate", subject: "res:body:currency", op: "==", operand: '"EUR"', holds: true },
    ]);
    expect(proof.body.recipient).toBe(RECIPIENT);
    expect(JSON.stringify(proof)).not.toContain("5a5a5a5a");
    const result = await verifyWithCli(JSON.stringify(proof), notary.pubPath, "--json", "--allow-test-anchor", "--allow-hidden-request", "--expect-claim", "res:body:balance>1000");
    expect(result.exitCode).toBe(0);
    const verified = JSON.parse(result.stdout) as VerifiedProofJson;
    expect(verified.claims.map((claim) => claim.text)).toEqual([
      "res:body:balance > 1000: holds",
      'res:body:name = "alice"',
      `res:body:balance: committed ${commitment}`,
      'res:body:currency == "EUR": holds',
    ]);
    expect(verified.recipient).toBe(RECIPIENT);
  });

  test("a value spread over chunks is read de-chunked, as the server meant it", async () => {
    const answer = await exchange(targets.split!, () => ({ claims: ["res:body:balance", "res:body:name==alice", "res:body:balance>=123456"] }));
    expect(answer.status).toBe(200);
    expect((answer.body as unknown as Proof).body.claims).toEqual([
      { kind: "value", subject: "res:body:balance", value: "123456" },
      { kind: "predicate", subject: "res:body:name", op: "==", operand: '"alice"', holds: true },
      { kind: "predicate", subject: "res:body:balance", op: ">=", operand: "123456", holds: true },
    ]);
  });

  test("a comparison the answer does not support is stated as not holding, never as holding", async () => {
    const answer = await exchange(targets.poor!, () => ({ claims: ["res:body:balance>1000"] }));
    expect((answer.body as unknown as Proof).body.claims).toEqual([{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: false }]);
    const result = await verifyWithCli(JSON.stringify(answer.body), notary.pubPath, "--allow-test-anchor", "--allow-hidden-request", "--expect-claim", "res:body:balance>1000");
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("res:body:balance>1000 does not hold");
  });
});

describe("claims the notary refuses, whatever the prover says", () => {
  test("the value of what the prover's own redactions hide", async () => {
    const answer = await exchange(targets.account!, (session) => ({ redactions: [hiding(session, "123456")], claims: ["res:body:balance"] }));
    expect(refusal(answer)).toMatchObject({ status: 422, code: "claim_unsupported" });
    expect(refusal(answer).message).toContain("claim 1 (res:body:balance): the proof hides this value");
  });

  test("a subject named twice: members of one name are ambiguous, whichever a parser would pick", async () => {
    const answer = await exchange(targets.twice!, () => ({ claims: ["res:body:balance>1000"] }));
    expect(refusal(answer)).toMatchObject({ status: 422, code: "claim_unsupported" });
    expect(refusal(answer).message).toContain("2 members named");
  });

  test("a value of another type than the comparison's: a string is no number", async () => {
    const answer = await exchange(targets.text!, () => ({ claims: ["res:body:balance>1000"] }));
    expect(refusal(answer)).toMatchObject({ status: 422, code: "claim_unsupported" });
    expect(refusal(answer).message).toContain("the value is a string, not a number");
  });

  test("a subject the answer does not have, a commitment without a salt, a claim that does not parse", async () => {
    const missing = await exchange(targets.account!, () => ({ claims: ["res:body:name", "res:body:owner.id==7"] }));
    expect(refusal(missing)).toMatchObject({ status: 422, code: "claim_unsupported" });
    expect(refusal(missing).message).toContain("claim 2 (res:body:owner.id): the body has no value at this path");
    const unsalted = await exchange(targets.account!, () => ({ claims: ["commit:res:body:balance"] }));
    expect(refusal(unsalted).message).toContain("commit: needs T-CLAIM-SALT");
    const garbled = await exchange(targets.account!, () => ({ claims: ["res:body:balance>>1000"] }));
    expect(refusal(garbled)).toMatchObject({ status: 400, code: "invalid_claim" });
  });
});
