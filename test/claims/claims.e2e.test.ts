import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { Hex } from "viem";
import { attestationCalldata, prove, TlsproofError, verifyProof } from "../../src/client/index.ts";
import type { ProverServer } from "../../src/app/prover.ts";
import { evmAttestationOf } from "../../src/proof/evm-attestation.ts";
import type { Proof } from "../../src/proof/format.ts";
import type { VerifiedProofJson } from "../../src/proof/render.ts";
import { scratchDir, TEST_SESSION, tlsFixture } from "../../testkit/env.ts";
import { runCli, SOURCE_CLI, startProverInProcess } from "../../testkit/prover.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type Account, Chain } from "../../testkit/evm/chain.ts";
import { VerifierContract } from "../../testkit/evm/verifier.ts";

/**
 * Claims end to end, through the composed prover (what `cli prover start` runs) with its embedded notary: a proof
 * that states `balance > 1000` without the balance, checked by `cli verify`, by the client, and by the contract on
 * the in-process EVM; MPC mode with a claim over a revealed value, and its refusal of one over a hidden value.
 */
const ACCOUNT = '{"name":"alice","balance":123456,"currency":"EUR"}';
const SALT = `0x${"c3".repeat(32)}`;
const RECIPIENT = "0x000000000000000000000000000000000000c1a1";
const CLAIMS = "res:body:balance>1000, res:body:currency==EUR, res:body:name, commit:res:body:balance";

const tls = tlsFixture();
const targets: Record<string, ScriptedTarget> = {};
let prover: ProverServer;
let proverUrl: string;
let notaryPubPath: string;
let notaryPubPem: string;

const answer = (body: string) => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

beforeAll(async () => {
  targets.tls13 = await startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket }) => void socket.end(answer(ACCOUNT)));
  targets.tls12 = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, ({ socket }) => void socket.end(answer(ACCOUNT)));
  // Its Set-Cookie value is hidden by default: an MPC notary never sees the whole head.
  targets.cookie12 = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, ({ socket }) =>
    void socket.end(answer(ACCOUNT).replace("Connection: close\r\n", "Connection: close\r\nSet-Cookie: sid=s3cr3t\r\n")),
  );
  const resolve = Object.values(targets).map((target) => `${TARGET_HOST}:${target.port}:127.0.0.1`).join(",");
  const started = await startProverInProcess(targets.tls13.port, {
    PROVER_RESOLVE: resolve,
    PROVER_MAX_SENT_DATA: String(TEST_SESSION.maxSentData),
    PROVER_MAX_RECV_DATA: String(TEST_SESSION.maxRecvData),
  });
  prover = started.server;
  proverUrl = prover.url;
  notaryPubPath = join(started.dataDir, "notary.pub");
  notaryPubPem = await Bun.file(notaryPubPath).text();
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  for (const target of Object.values(targets)) target.stop();
});

const urlOf = (target: ScriptedTarget) => `https://${TARGET_HOST}:${target.port}/account`;

/** `cli verify` of a proof, with `flags`. */
async function verifyCli(proof: Proof, ...flags: string[]) {
  const path = join(scratchDir("claims"), "proof.json");
  writeFileSync(path, JSON.stringify(proof));
  return runCli(SOURCE_CLI, ["verify", "--notary-pub-key", notaryPubPath, "--proof", path, "--allow-test-anchor", ...flags]);
}

describe("a proxy-mode proof that states facts of a value it hides", () => {
  let proof: Proof;
  let falseProof: Proof;

  beforeAll(async () => {
    const made = await prove({
      prover: proverUrl,
      notaryKeys: notaryPubPem,
      url: urlOf(targets.tls13!),
      mode: "proxy",
      redact: "res:body:balance",
      claims: CLAIMS,
      claimSalt: SALT,
      recipient: RECIPIENT,
      allowTestTrustAnchor: true,
    });
    proof = made.proof;
    const other = await prove({
      prover: proverUrl,
      notaryKeys: notaryPubPem,
      url: urlOf(targets.tls13!),
      mode: "proxy",
      redact: "res:body:balance",
      claims: "res:body:balance>99999999",
      allowTestTrustAnchor: true,
    });
    falseProof = other.proof;
    expect(other.claims).toEqual([{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "99999999", holds: false }]);
  }, 60_000);

  test("verifies, holds no byte of the balance, and cli verify --json lists the four claims", async () => {
    expect(proof.body.tlsVersion).toBe("TLS1.3");
    const revealed = proof.body.transcript.recv.revealed.map((range) => Buffer.from(range.data, "base64").toString()).join("");
    expect(revealed).toContain('"name":"alice"');
    expect(revealed).not.toContain("123456");
    expect(JSON.stringify(proof)).not.toContain("123456");
    expect(JSON.stringify(proof)).not.toContain(SALT.slice(2, 20));
    const result = await verifyCli(proof, "--json");
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as VerifiedProofJson;
    const commitment = `0x${Buffer.from(keccak_256(Buffer.concat([Buffer.from(SALT.slice(2), "hex"), Buffer.from("123456")]))).toString("hex")}`;
    expect(json.claims).toEqual([
      { kind: "predicate", subject: "res:body:balance", text: "res:body:balance > 1000: holds", op: ">", operand: 1000, holds: true },
      { kind: "predicate", subject: "res:body:currency", text: 'res:body:currency == "EUR": holds', op: "==", operand: "EUR", holds: true },
      { kind: "value", subject: "res:body:name", text: 'res:body:name = "alice"', value: "alice", valueJson: '"alice"' },
      { kind: "commitment", subject: "res:body:balance", text: `res:body:balance: committed ${commitment}`, commitment },
    ]);
    expect(json.recipient).toBe(RECIPIENT);
    const text = await verifyCli(proof);
    expect(text.stdout).toContain("Claims (stated by the notary on the answer it checked):\n  res:body:balance > 1000: holds\n");
    expect(text.stdout.indexOf("Claims")).toBeLessThan(text.stdout.indexOf("Request (sent)"));
  });

  test("a claim that does not hold is stated false; --expect-claim passes the first proof and fails the second", async () => {
    const expect1000 = ["--expect-claim", "res:body:balance>1000"];
    expect((await verifyCli(proof, ...expect1000)).exitCode).toBe(0);
    expect((await verifyCli(proof, ...expect1000, "--expect-claim", "res:body:currency==EUR", "--expect-recipient", RECIPIENT)).exitCode).toBe(0);
    const refused = await verifyCli(falseProof, "--expect-claim", "res:body:balance>99999999");
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("the proof states that res:body:balance>99999999 does not hold");
    expect((await verifyCli(falseProof, ...expect1000)).exitCode).toBe(1);
    expect((await verifyCli(falseProof, "--expect-recipient", RECIPIENT)).stderr).toContain("the proof names no recipient");
    const usage = await verifyCli(proof, "--expect-claim", "res:body:balance>>1");
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toContain("--expect-claim 1: entry 1: > compares numbers only");
  });

  test("verifyProof checks the claims and the recipient as expectations", () => {
    const verified = verifyProof(proof, notaryPubPem, { allowTestTrustAnchor: true, allowHiddenRequest: true, claims: ["res:body:balance>1000"], recipient: RECIPIENT });
    expect(verified.claims).toHaveLength(4);
    expect(() => verifyProof(falseProof, notaryPubPem, { allowTestTrustAnchor: true, allowHiddenRequest: true, claims: ["res:body:balance>99999999"] })).toThrow("does not hold");
    expect(() => verifyProof(falseProof, notaryPubPem, { allowTestTrustAnchor: true, allowHiddenRequest: true, claims: ["res:body:balance>1000"] })).toThrow("the proof states no claim res:body:balance>1000");
    expect(() => verifyProof(proof, notaryPubPem, { allowTestTrustAnchor: true, recipient: "0x0000000000000000000000000000000000000001" })).toThrow(`the proof was made for ${RECIPIENT}`);
  });

  test("the contract verifies the claims and recipient in one call; a changed claim or recipient fails", async () => {
    const chain = await Chain.start();
    const owner: Account = await chain.account();
    const verifier = await VerifierContract.deploy(chain, owner);
    await verifier.setNotary(proof.body.evm!.address as Hex, true);
    await verifier.setAcceptsTestTrustAnchor(true);
    await verifier.setAcceptsProxyMode(true);
    const attestation = evmAttestationOf(proof.body);
    const signature = proof.body.evm!.signature as Hex;
    const read = await verifier.verifiedClaims(attestation, signature);
    expect(read.ok).toBe(true);
    if (!read.ok) return;
    expect(read.value.recipient.toLowerCase()).toBe(RECIPIENT);
    expect(read.value.claims.map(({ kind, subject, op, operand, holds, value }) => ({ kind, subject, op, operand, holds, value }))).toEqual([
      { kind: 1, subject: "res:body:balance", op: ">", operand: "1000", holds: true, value: "" },
      { kind: 1, subject: "res:body:currency", op: "==", operand: '"EUR"', holds: true, value: "" },
      { kind: 0, subject: "res:body:name", op: "", operand: "", holds: false, value: '"alice"' },
      { kind: 2, subject: "res:body:balance", op: "", operand: "", holds: false, value: "" },
    ]);
    const flipped = { ...attestation, claims: attestation.claims.map((claim, i) => (i === 0 ? { ...claim, holds: false } : claim)) };
    expect(await verifier.verifiedClaims(flipped, signature)).toEqual({ ok: false, error: "UnknownNotary" });
    const stolen = { ...attestation, recipient: new Uint8Array(20).fill(0xee) };
    expect(await verifier.verifiedClaims(stolen, signature)).toEqual({ ok: false, error: "UnknownNotary" });
    // What the client hands a dapp is exactly what the contract takes.
    const calldata = attestationCalldata(proof);
    expect(calldata.functions.verifiedClaims).toBe("verifiedProxyClaims");
    expect(calldata.args[0].recipient).toBe(RECIPIENT);
    expect(calldata.args[0].claims).toHaveLength(4);
  });
});

describe("cli prove", () => {
  test("--claim, --claim-salt and --recipient: the proof states them, and the command prints each claim", async () => {
    const out = join(scratchDir("claims-cli"), "proof.json");
    const result = await runCli(SOURCE_CLI, [
      "prove", "--prover", proverUrl, "--notary-pub-key", notaryPubPath, "--url", urlOf(targets.tls13!), "--mode", "proxy",
      "--redact", "res:body:balance", "--claim", "res:body:balance>1000", "--claim", "commit:res:body:balance",
      "--claim-salt", SALT, "--recipient", RECIPIENT, "--allow-test-anchor", "--out", out,
    ]);
    expect(result.stderr).toContain("claim: res:body:balance > 1000: holds");
    expect(result.stderr).toContain("claim: res:body:balance: committed 0x");
    expect(result.exitCode).toBe(0);
    const proof = JSON.parse(await Bun.file(out).text()) as Proof;
    expect(proof.body.claims?.map((claim) => claim.kind)).toEqual(["predicate", "commitment"]);
    expect(proof.body.recipient).toBe(RECIPIENT);
    const refused = await runCli(SOURCE_CLI, [
      "prove", "--prover", proverUrl, "--notary-pub-key", notaryPubPath, "--url", urlOf(targets.tls13!), "--mode", "proxy",
      "--claim", "commit:res:body:balance", "--allow-test-anchor", "--out", out,
    ]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("error: invalid_claim: --claim entry 1: commit: needs --claim-salt");
  }, 60_000);
});

describe("claims refused before anything is sent", () => {
  const call = (headers: Record<string, string>) =>
    fetch(`${proverUrl}/proxy`, { headers: { "T-PROXY-URL": urlOf(targets.tls13!), "T-REQUEST-ID": crypto.randomUUID(), ...headers } });

  test("a value the proof hides, a commitment without salt, a malformed claim or recipient: 400 naming it", async () => {
    const cases: [Record<string, string>, string, string][] = [
      [{ "T-PROOF-MODE": "proxy", "T-REDACTED": "res:body:balance", "T-CLAIM": "res:body:balance" }, "invalid_claim", "which the proof hides"],
      [{ "T-PROOF-MODE": "proxy", "T-CLAIM": "commit:res:body:balance" }, "invalid_claim", "commit: needs T-CLAIM-SALT"],
      [{ "T-PROOF-MODE": "proxy", "T-CLAIM": "res:body:balance>" }, "invalid_claim", "T-CLAIM entry 1: the comparison has no value"],
      [{ "T-PROOF-MODE": "proxy", "T-RECIPIENT": "alice" }, "invalid_header", "T-RECIPIENT must be an Ethereum address"],
      [{ "T-PROOF-MODE": "proxy", "T-CLAIM-SALT": "0x12" }, "invalid_header", "T-CLAIM-SALT must be 0x and 64 hex digits"],
    ];
    for (const [headers, code, message] of cases) {
      const response = await call(headers);
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe(code);
      expect(error.message).toContain(message);
    }
  });

  test("MPC mode: a claim over a hidden value is a 400 naming proxy mode", async () => {
    const response = await call({ "T-PROOF-MODE": "mpc", "T-REDACTED": "res:body:balance", "T-CLAIM": "res:body:balance>1000" });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error).toMatchObject({ code: "invalid_claim" });
    expect(error.message).toContain("use T-PROOF-MODE: proxy");
  });
});

describe("MPC mode", () => {
  test("a claim over a revealed value is judged by the MPC notary on the revealed bytes", async () => {
    const made = await prove({
      prover: proverUrl,
      notaryKeys: notaryPubPem,
      url: urlOf(targets.tls12!),
      mode: "mpc",
      redact: "req:header:x-client",
      headers: { "X-Client": "demo" },
      claims: ["res:body:balance>1000", "res:body:currency"],
      allowTestTrustAnchor: true,
    });
    expect(made.mode).toBe("mpc");
    expect(made.claims).toEqual([
      { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
      { kind: "value", subject: "res:body:currency", value: '"EUR"' },
    ]);
  }, 240_000);

  test("an answer whose head the proof does not reveal whole: the MPC notary refuses the claim on the stream, naming proxy mode", async () => {
    const refused = await prove({
      prover: proverUrl,
      notaryKeys: notaryPubPem,
      url: urlOf(targets.cookie12!),
      mode: "mpc",
      claims: "res:body:balance>1000",
      allowTestTrustAnchor: true,
    }).catch((error: unknown) => error as TlsproofError);
    expect(refused).toBeInstanceOf(TlsproofError);
    expect((refused as TlsproofError).code).toBe("claim_unsupported");
    expect((refused as TlsproofError).message).toContain("the answer's head is hidden from the notary");
    expect((refused as TlsproofError).message).toContain(`use mode: "proxy"`);
  }, 240_000);
});
