import { describe, expect, test } from "bun:test";
import type { Claim } from "../../src/claims/claim.ts";
import { AppError } from "../../src/core/errors.ts";
import { withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import type { ProofBody } from "../../src/proof/format.ts";
import { decodePublicKeyPem, generateKey, type NotaryKey } from "../../src/proof/keys.ts";
import { verifyQuorum } from "../../src/proof/quorum.ts";
import { signProof } from "../../src/proof/sign.ts";
import { sampleBody } from "./fixtures.ts";

/** Three notaries' proofs of one server, each its own session (its own request id and time), with the same claims. */
const CLAIMS: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"EUR"' }];
const keys = [generateKey("secp256k1"), generateKey("secp256k1"), generateKey("secp256r1")];
const pinned = keys.map((key) => decodePublicKeyPem(key.publicKeyPem));

function proofBy(key: NotaryKey, change: Partial<ProofBody> = {}) {
  const body = { ...sampleBody(key), requestId: crypto.randomUUID(), notarizedAt: Date.now(), claims: CLAIMS, ...change };
  return signProof(withEvmAttestation(body, key), key);
}

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected a refusal");
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
    const error = refusal(() => verifyQuorum(twice, pinned, 3));
    expect(error.code).toBe("proof_mismatch");
    expect(error.message).toBe("not a quorum of 3: 3 proofs but 2 distinct notaries signed them");
    expect(refusal(() => verifyQuorum([proofBy(keys[0]!)], pinned, 2)).message).toBe("not a quorum of 2: 1 distinct notary signed them");
  });

  test("a proof by a notary that is not pinned, or altered, is invalid, named by its place", () => {
    const stranger = generateKey("secp256k1");
    const error = refusal(() => verifyQuorum([proofBy(keys[0]!), proofBy(stranger)], pinned, 2));
    expect(error.code).toBe("proof_invalid");
    expect(error.message).toStartWith("proof 2: invalid proof: signed by a different notary key");
  });

  test("proofs that disagree: another claim, another result, another server, or no claims at all", () => {
    const [a, b] = [keys[0]!, keys[1]!];
    const other: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"USD"' }];
    expect(refusal(() => verifyQuorum([proofBy(a), proofBy(b, { claims: other })], pinned, 2)).message).toBe(
      'not a quorum of 2: proof 2 states res:body:currency = "USD" where proof 1 states res:body:currency = "EUR"',
    );
    expect(refusal(() => verifyQuorum([proofBy(a), proofBy(b, { claims: [...CLAIMS, ...other] })], pinned, 2)).message).toBe("not a quorum of 2: proof 2 states 2 claims, proof 1 1");
    expect(refusal(() => verifyQuorum([proofBy(a), proofBy(b, { serverName: "api.other.com" })], pinned, 2)).message).toContain("proof 2 is of api.other.com");
    expect(refusal(() => verifyQuorum([proofBy(a, { claims: [] }), proofBy(b, { claims: [] })], pinned, 2)).message).toContain("the proofs state no claim");
  });

  test("each proof meets the caller's expectations; a quorum below 1 is the caller's mistake", () => {
    const proofs = [proofBy(keys[0]!), proofBy(keys[1]!)];
    expect(refusal(() => verifyQuorum(proofs, pinned, 2, { claims: ["res:body:currency==USD"] })).message).toStartWith("proof 1: the proof states no claim");
    expect(refusal(() => verifyQuorum(proofs, pinned, 0)).code).toBe("config_invalid");
  });
});

describe("a quorum of one", () => {
  test("is one valid proof with claims", () => {
    expect(verifyQuorum([proofBy(keys[0]!)], pinned, 1).notaries).toHaveLength(1);
  });
});
