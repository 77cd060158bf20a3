import { describe, expect, test } from "bun:test";
import { refusalOf } from "../../testkit/app-error.ts";
import type { Claim } from "../../src/claims/claim.ts";
import { withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import type { ProofBody } from "../../src/proof/format.ts";
import { decodePublicKeyPem, generateKey, type NotaryKey } from "../../src/proof/keys.ts";
import { type QuorumProof, disagreement, isQuorumProofText, quorumProofOf, signedProofsOf, verifyQuorum } from "../../src/proof/quorum.ts";
import { signProof } from "../../src/proof/sign.ts";
import { REQUEST, directionHiding, preClaimsSampleBody, sampleBody } from "./fixtures.ts";

/** Three notaries' proofs of one server, each its own session (its own request id and time), with the same claims. */
const CLAIMS: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"EUR"' }];
const keys = [generateKey("secp256k1"), generateKey("secp256k1"), generateKey("secp256r1")];
const pinned = keys.map((key) => decodePublicKeyPem(key.publicKeyPem));

function proofBy(key: NotaryKey, change: Partial<ProofBody> = {}) {
  const body = { ...sampleBody(key), requestId: crypto.randomUUID(), notarizedAt: Date.now(), claims: CLAIMS, ...change };
  return signProof(withEvmAttestation(body, key), key);
}


describe("a quorum of proofs", () => {
  test("M proofs by M distinct pinned notaries stating the same claims of one server: accepted, with the claims and signers", () => {
    const proofs = keys.map((key) => proofBy(key));
    const quorum = verifyQuorum(proofs, pinned, 3);
    expect(quorum.claims).toEqual(CLAIMS);
    expect(quorum.serverName).toBe("api.example.com");
    expect(new Set(quorum.notaries).size).toBe(3);
    expect(verifyQuorum(proofs.slice(0, 2), pinned, 2).notaries).toHaveLength(2);
  });

  test("fewer distinct notaries than the quorum: one notary's two proofs count once", () => {
    const twice = [proofBy(keys[0]!), proofBy(keys[0]!), proofBy(keys[1]!)];
    const error = refusalOf(() => verifyQuorum(twice, pinned, 3));
    expect(error.code).toBe("proof_mismatch");
    expect(error.message).toBe("not a quorum of 3: 3 proofs but 2 distinct notaries signed them");
    expect(refusalOf(() => verifyQuorum([proofBy(keys[0]!)], pinned, 2)).message).toBe("not a quorum of 2: 1 distinct notary signed them");
  });

  test("a proof by a notary that is not pinned, or altered, is invalid, named by its place", () => {
    const stranger = generateKey("secp256k1");
    const error = refusalOf(() => verifyQuorum([proofBy(keys[0]!), proofBy(stranger)], pinned, 2));
    expect(error.code).toBe("proof_invalid");
    expect(error.message).toStartWith("proof 2: invalid proof: signed by a different notary key");
  });

  test("proofs that disagree: another claim, another result, another server, or no claims at all", () => {
    const [a, b] = [keys[0]!, keys[1]!];
    const other: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"USD"' }];
    expect(refusalOf(() => verifyQuorum([proofBy(a), proofBy(b, { claims: other })], pinned, 2)).message).toBe(
      'not a quorum of 2: proof 2 states res:body:currency = "USD" where proof 1 states res:body:currency = "EUR"',
    );
    expect(refusalOf(() => verifyQuorum([proofBy(a), proofBy(b, { claims: [...CLAIMS, ...other] })], pinned, 2)).message).toBe("not a quorum of 2: proof 2 states 2 claims, proof 1 1");
    expect(refusalOf(() => verifyQuorum([proofBy(a), proofBy(b, { serverName: "api.other.com" })], pinned, 2)).message).toContain("proof 2 is of api.other.com");
    expect(refusalOf(() => verifyQuorum([proofBy(a, { claims: [] }), proofBy(b, { claims: [] })], pinned, 2)).message).toContain("the proofs state no claim");
  });

  test("each proof meets the caller's expectations; a quorum below 1 is the caller's mistake", () => {
    const proofs = [proofBy(keys[0]!), proofBy(keys[1]!)];
    expect(refusalOf(() => verifyQuorum(proofs, pinned, 2, { claims: ["res:body:currency==USD"] })).message).toStartWith("proof 1: the proof states no claim");
    for (const wrong of [0, 1.5, -1]) expect(refusalOf(() => verifyQuorum(proofs, pinned, wrong))).toMatchObject({ code: "config_invalid", message: "a quorum is a whole number from 1" });
    // Separate proofs state no size of their own: the caller must.
    expect(refusalOf(() => verifyQuorum(proofs, pinned))).toMatchObject({ code: "config_invalid", message: "a quorum needs --quorum, or a quorum proof that states its own" });
  });

  test("what is not a proof is refused as verifyProof refuses it, named by its place", () => {
    expect(refusalOf(() => verifyQuorum(["not json", proofBy(keys[1]!)], pinned, 2)).message).toStartWith("proof 1: invalid proof: not JSON");
    expect(refusalOf(() => verifyQuorum([proofBy(keys[0]!), "null"], pinned, 2)).message).toBe("proof 2: invalid proof: not a JSON object");
  });
});

describe("a quorum of one", () => {
  test("is one valid proof with claims", () => {
    expect(verifyQuorum([proofBy(keys[0]!)], pinned, 1).notaries).toHaveLength(1);
  });
});

/** The same three notaries' proofs of one request id, as a prover's T-QUORUM call gets them. */
function oneRequestBy(count: number, change: Partial<ProofBody> = {}) {
  const requestId = crypto.randomUUID();
  return keys.slice(0, count).map((key) => proofBy(key, { requestId, ...change }));
}

function quorumProof(proofs: ReturnType<typeof proofBy>[], quorum: number): QuorumProof {
  const made = quorumProofOf(proofs, quorum);
  if (!("proofs" in made)) throw new Error(`no quorum proof: ${made.reason}`);
  return made;
}

describe("a quorum proof (what a prover delivers for T-QUORUM)", () => {
  test("is told from a proof by its version; its signed proofs are its own, a proof's is itself", () => {
    const proofs = oneRequestBy(2);
    const bundle = quorumProof(proofs, 2);
    expect(signedProofsOf(bundle)).toEqual(proofs);
    expect(signedProofsOf(proofs[0]!)).toEqual([proofs[0]!]);
    expect(isQuorumProofText(JSON.stringify(bundle))).toBe(true);
    for (const other of [JSON.stringify(proofs[0]), "null", '"tlsproof-quorum/1"', "[]", "not json"]) expect(isQuorumProofText(other)).toBe(false);
  });

  test("holds the proofs and writes out what they share; verified at its own size without a quorum given, or at a larger one", () => {
    const bundle = quorumProof(oneRequestBy(2), 2);
    expect(bundle).toMatchObject({ version: "tlsproof-quorum/1", quorum: 2, serverName: "api.example.com", requestLine: "GET /v1/balance HTTP/1.1", claims: CLAIMS });
    const verified = verifyQuorum([JSON.stringify(bundle)], pinned);
    expect(verified.required).toBe(2);
    expect(verified.notaries).toHaveLength(2);
    expect(verified.requestLine).toBe("GET /v1/balance HTTP/1.1");
    // The verifier's quorum only raises the bar: 3 of a 2-notary quorum proof is refused, 1 still needs its own 2.
    expect(refusalOf(() => verifyQuorum([bundle], pinned, 3)).message).toBe("not a quorum of 3: 2 distinct notaries signed them");
    expect(verifyQuorum([bundle], pinned, 1).required).toBe(2);
    expect(refusalOf(() => verifyQuorum([bundle], pinned.slice(0, 1))).message).toStartWith("proof 2: invalid proof: signed by a different notary key");
  });

  test("its written-out fields are checked against its signed proofs, never taken on trust", () => {
    const bundle = quorumProof(oneRequestBy(2), 2);
    const lying = (change: Partial<QuorumProof>) => refusalOf(() => verifyQuorum([{ ...bundle, ...change }], pinned));
    expect(lying({ requestLine: "GET /v1/other HTTP/1.1" }).message).toBe("not a quorum of 2: the quorum proof's requestLine is not its proofs'");
    expect(lying({ claims: [{ kind: "value", subject: "res:body:currency", value: '"USD"' }] }).message).toBe("not a quorum of 2: the quorum proof's claims is not its proofs'");
    expect(lying({ serverName: "api.other.com" }).message).toBe("not a quorum of 2: the quorum proof's serverName is not its proofs'");
    expect(lying({ requestId: crypto.randomUUID() }).message).toBe("not a quorum of 2: the quorum proof's requestId is not its proofs'");
    // One proof of another request id is enough to refuse it.
    const mixed = quorumProof([proofBy(keys[0]!), proofBy(keys[1]!)], 2);
    expect(refusalOf(() => verifyQuorum([mixed], pinned)).message).toBe("not a quorum of 2: the quorum proof's requestId is not its proofs'");
    // A quorum of one is no quorum proof, and its proofs are not dropped for fewer.
    expect(lying({ quorum: 1 }).message).toBe("invalid quorum proof: quorum: Invalid value: Expected >=2 but received 1");
    expect(lying({ proofs: bundle.proofs.slice(0, 1) }).code).toBe("proof_invalid");
    // Duplicate keys: JSON.parse keeps the last, another reader the first.
    const twice = JSON.stringify(bundle).replace('"quorum":2', '"quorum":3,"quorum":2');
    expect(refusalOf(() => verifyQuorum([twice], pinned)).message).toStartWith("invalid quorum proof: ");
    expect(verifyQuorum([JSON.stringify(bundle)], pinned).required).toBe(2);
  });

  test("proofs of another request line, or hiding their request, are no quorum: the claims would be of different requests", () => {
    const other = directionHiding(REQUEST.replace("/v1/balance", "/v1/balanc2"), []);
    const [a, b] = [keys[0]!, keys[1]!];
    expect(disagreement([proofBy(a).body, proofBy(b, { transcript: { ...proofBy(b).body.transcript, sent: other } }).body])?.reason).toBe(
      'proof 2 shows the request "GET /v1/balanc2 HTTP/1.1", proof 1 "GET /v1/balance HTTP/1.1"',
    );
    expect(disagreement([proofBy(a).body, proofBy(b, { request: "hidden" }).body])).toEqual({ claims: false, reason: "proof 2 hides its request: nothing shows the proofs are of one request" });
    expect(disagreement([proofBy(a).body, proofBy(b, { recipient: "0x" + "11".repeat(20) }).body])?.reason).toBe(`proof 2 is made for 0x${"11".repeat(20)}, proof 1 for no recipient`);
    expect(disagreement([proofBy(a, { recipient: "0x" + "11".repeat(20) }).body, proofBy(b).body])?.reason).toBe(`proof 2 is made for no recipient, proof 1 for 0x${"11".repeat(20)}`);
    // Proofs made before claims state none: nothing for a quorum to agree on.
    const preClaims = (key: NotaryKey) => ({ ...preClaimsSampleBody(key) });
    expect(disagreement([preClaims(a), preClaims(b)])?.reason).toBe("the proofs state no claim, and independent sessions agree on their claims only (T-CLAIM)");
    expect(disagreement([])).toEqual({ claims: false, reason: "no proof" });
  });

  test("a value that changed between the sessions is a disagreement of claims, each differing claim named", () => {
    const two: Claim[] = [...CLAIMS, { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true }];
    const changed: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"USD"' }, { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: false }];
    const made = quorumProofOf([proofBy(keys[0]!, { claims: two }), proofBy(keys[1]!, { claims: changed })], 2);
    expect(made).toEqual({
      claims: true,
      reason: 'proof 2 states res:body:currency = "USD" where proof 1 states res:body:currency = "EUR"; proof 2 states res:body:balance > 1000: does not hold where proof 1 states res:body:balance > 1000: holds',
    });
  });
});
