/**
 * A quorum of proofs: M or more proofs of one server, each from its own session, signed by distinct pinned notaries,
 * that state the same claims. The transcripts of independent sessions differ (a Date header, a request id), so what
 * a quorum agrees on is its claims (src/claims/), which it must have. Each proof is verified on its own first, with
 * the caller's expectations; then the quorum's rules. A fake then needs every one of those notaries (docs/notary.md,
 * "Trust").
 */
import { AppError } from "../core/errors.ts";
import { sameServerName } from "../core/server-name.ts";
import { claimLine } from "../claims/claim.ts";
import type { Claim } from "./format.ts";
import type { PublicKey } from "./keys.ts";
import { type ProofExpectations, type VerifiedProof, verifyProof } from "./verify.ts";

export interface VerifiedQuorum {
  /** The claims every proof states, as they state them. */
  claims: Claim[];
  serverName: string;
  /** The fingerprints of the notaries that signed, one per proof, in the proofs' order. */
  notaries: string[];
  proofs: VerifiedProof[];
}

const mismatch = (reason: string) => new AppError("proof_mismatch", `not a quorum of ${reason}`);

/**
 * Verifies `proofs` (parsed JSON or JSON texts) as a quorum of `quorum` against the pinned keys: each valid and as
 * `expected`, at least `quorum` of them by distinct pinned notaries, all of one server, all stating the same,
 * non-empty claims. Throws proof_invalid for a proof that is not valid, proof_mismatch for valid proofs that are no
 * such quorum, config_invalid for a quorum that is not a whole number from 1.
 */
export function verifyQuorum(proofs: readonly unknown[], pinned: readonly PublicKey[], quorum: number, expected: ProofExpectations = {}): VerifiedQuorum {
  if (!Number.isSafeInteger(quorum) || quorum < 1) throw new AppError("config_invalid", "a quorum is a whole number from 1");
  const verified = proofs.map((proof, index) => {
    try {
      return verifyProof(proof, pinned, expected);
    } catch (error) {
      if (error instanceof AppError) throw new AppError(error.code, `proof ${index + 1}: ${error.message}`, error.details);
      throw error;
    }
  });
  const notaries = verified.map((proof) => proof.notaryFingerprint);
  const distinct = new Set(notaries).size;
  if (distinct < quorum) throw mismatch(`${quorum}: ${distinct === verified.length ? "" : `${verified.length} proofs but `}${distinct} distinct notar${distinct === 1 ? "y" : "ies"} signed them`);
  const [first] = verified;
  if (first!.claims.length === 0) throw mismatch(`${quorum}: the proofs state no claim, and independent sessions agree on their claims only (T-CLAIM)`);
  const lines = first!.claims.map(claimLine);
  for (const [index, proof] of verified.entries()) {
    if (!sameServerName(proof.body.serverName, first!.body.serverName)) throw mismatch(`${quorum}: proof ${index + 1} is of ${proof.body.serverName}, proof 1 of ${first!.body.serverName}`);
    const own = proof.claims.map(claimLine);
    if (own.length !== lines.length) throw mismatch(`${quorum}: proof ${index + 1} states ${own.length} claims, proof 1 ${lines.length}`);
    const at = own.findIndex((line, i) => line !== lines[i]);
    if (at >= 0) throw mismatch(`${quorum}: proof ${index + 1} states ${own[at]} where proof 1 states ${lines[at]}`);
  }
  return { claims: first!.claims, serverName: first!.body.serverName, notaries, proofs: verified };
}
