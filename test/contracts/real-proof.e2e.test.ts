import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { Hex } from "viem";
import { evmAttestationOf, type EvmAttestation, requestIdBytes, SEGMENT_HEADER_BYTES, withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import type { Proof } from "../../src/proof/format.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { firstEvent, proofData } from "../../testkit/sse.ts";
import { SECRET_VALUE, startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type Account, Chain } from "../../testkit/evm/chain.ts";
import { VerifierContract } from "../../testkit/evm/verifier.ts";

/**
 * One real MPC session (a `cli prover start` process with its embedded secp256k1 notary, the local TLS target)
 * makes one proof; every assertion below checks that proof's EVM attestation in a real EVM.
 */
describe("a real proof's EVM attestation on chain", () => {
  let target: Server<undefined>;
  let prover: RunningProver;
  let proof: Proof;
  let attestation: EvmAttestation;
  let signature: Hex;
  let notaryAddress: Hex;
  let chain: Chain;
  let owner: Account;
  let verifier: VerifierContract;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!);
    const requestId = crypto.randomUUID();
    const event = firstEvent(`${prover.url}/proof/${requestId}`, 240_000);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": requestId, "T-REDACTED": "res:body:secret" },
    });
    if (response.status !== 200) throw new Error(`/proxy answered ${response.status}: ${await response.text()}`);
    proof = JSON.parse(proofData(await event).proofText) as Proof;
    attestation = evmAttestationOf(proof.body);
    signature = proof.body.evm!.signature as Hex;
    notaryAddress = proof.body.evm!.address as Hex;

    chain = await Chain.start();
    owner = await chain.account();
    verifier = await VerifierContract.deploy(chain, owner);
    await verifier.setNotary(notaryAddress, true);
    // The local target is certified by the test CA, so the proof says testTrustAnchor: true.
    await verifier.setAcceptsTestTrustAnchor(true);
  }, 300_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 120_000);

  test("the proof verifies off chain with its EVM attestation, under the address /info and /notaryinfo publish", async () => {
    const verified = verifyProof(proof, prover.notaryPubPem, { allowTestTrustAnchor: true });
    expect(verified.evm?.address).toBe(notaryAddress);
    expect(verified.body.testTrustAnchor).toBe(true);
    const info = (await (await fetch(`${prover.url}/info`)).json()) as { notary: { ethereumAddress: string } };
    const notaryInfo = (await (await fetch(`${prover.url}/notaryinfo`)).json()) as { ethereumAddress: string };
    expect(info.notary.ethereumAddress).toBe(notaryAddress);
    expect(notaryInfo.ethereumAddress).toBe(notaryAddress);
  });

  test("the contract accepts it and names the notary", async () => {
    const outcome = await verifier.verify(attestation, signature);
    expect(outcome.ok && outcome.value.toLowerCase()).toBe(notaryAddress);
  });

  test("a dapp reads a JSON value it located off chain; the hidden secret cannot be read", async () => {
    const recv = proof.body.transcript.recv;
    const range = recv.revealed.find((r) => Buffer.from(r.data, "base64").includes('"name":"alice"'))!;
    const offset = range.start + Buffer.from(range.data, "base64").indexOf('"alice"');
    const read = await verifier.verifiedRange(attestation, signature, "recv", offset, offset + 7);
    expect(read.ok && Buffer.from(read.value).toString()).toBe('"alice"');

    const secret = proof.body.redactions.find((r) => r.pattern === "res:body:secret")!.spans[0]!;
    expect(secret.end - secret.start).toBe(SECRET_VALUE.length + 2);
    expect(await verifier.verifiedRange(attestation, signature, "recv", secret.start, secret.end)).toEqual({ ok: false, error: "RangeNotRevealed" });
  });

  test("a tampered segment is rejected", async () => {
    const revealed = new Uint8Array(attestation.revealed);
    revealed[SEGMENT_HEADER_BYTES + 4]! ^= 0x01; // a byte of the request line
    expect(await verifier.verify({ ...attestation, revealed }, signature)).toEqual({ ok: false, error: "UnknownNotary" });
    const shifted = new Uint8Array(attestation.revealed);
    shifted[4]! += 1; // the first segment's offset
    expect(await verifier.verify({ ...attestation, revealed: shifted }, signature)).toEqual({ ok: false, error: "UnknownNotary" });
  });

  test("the attestation replayed for another request id is rejected", async () => {
    const replayed = { ...attestation, requestId: requestIdBytes(crypto.randomUUID())! };
    expect(await verifier.verify(replayed, signature)).toEqual({ ok: false, error: "UnknownNotary" });
  });

  test("a foreign notary is rejected: its attestation of the same data, and this notary in a contract that does not list it", async () => {
    const foreignKey = generateKey("secp256k1");
    const foreign = withEvmAttestation({ ...proof.body, notary: { publicKey: foreignKey.publicKeyPem, algorithm: "secp256k1" } }, foreignKey);
    expect(await verifier.verify(evmAttestationOf(foreign), foreign.evm!.signature as Hex)).toEqual({ ok: false, error: "UnknownNotary" });

    const other = await VerifierContract.deploy(chain, owner);
    await other.setAcceptsTestTrustAnchor(true);
    await other.setNotary(foreign.evm!.address as Hex, true);
    expect(await other.verify(attestation, signature)).toEqual({ ok: false, error: "UnknownNotary" });
  });

  test("a contract that refuses test trust anchors refuses this proof", async () => {
    const strict = await VerifierContract.deploy(chain, owner);
    await strict.setNotary(notaryAddress, true);
    expect(await strict.verify(attestation, signature)).toEqual({ ok: false, error: "TestTrustAnchor" });
  });
});
