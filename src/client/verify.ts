import { inOptionWords } from "./callers-words.ts";
import { AppError } from "../core/errors.ts";
import { decodePublicKeyPem } from "../proof/keys.ts";
import { type ProofExpectations, type VerifiedProof, verifyProof as verifyWithKeys } from "../proof/verify.ts";
import { type VerifiedQuorum, verifyQuorum as verifyQuorumWithKeys } from "../proof/quorum.ts";
import { TlsproofError } from "./errors.ts";

export type { ProofExpectations, VerifiedProof } from "../proof/verify.ts";
export type { VerifiedQuorum } from "../proof/quorum.ts";

/**
 * Verifies a proof (its JSON text, or the parsed object) offline with the code of `cli verify`: valid when one
 * of the `pinnedKeys` (SPKI PEM) signed it and it is of the request id and server name `expected` names (when
 * given). Throws TlsproofError `proof_invalid` with the reason, `proof_mismatch` for a valid proof of another
 * request or server, or `config_invalid` for a pinned key that is not a valid key. A proof made under a test
 * trust anchor is valid but says so: `testTrustAnchor` and `warnings`.
 */
export function verifyProof(proof: unknown, pinnedKeys: string | readonly string[], expected: ProofExpectations = {}): VerifiedProof {
  return withPinnedKeys(pinnedKeys, (keys) => verifyWithKeys(proof, keys, expected));
}

/**
 * Verifies proofs, or a quorum proof (a prover's answer to `T-QUORUM`), as a quorum (src/proof/quorum.ts): at least
 * `quorum` of them (and a quorum proof's own size; `quorum` may be left out for one), by distinct notaries among
 * `pinnedKeys`, showing one request of one server, stating the same claims, each as `expected`. Throws as verifyProof does.
 */
export function verifyQuorum(proofs: readonly unknown[], pinnedKeys: string | readonly string[], quorum?: number, expected: ProofExpectations = {}): VerifiedQuorum {
  return withPinnedKeys(pinnedKeys, (keys) => verifyQuorumWithKeys(proofs, keys, quorum, expected));
}

/** Runs `verify` over the decoded keys; every refusal as a TlsproofError in the caller's words. */
function withPinnedKeys<T>(pinnedKeys: string | readonly string[], verify: (keys: ReturnType<typeof decodePublicKeyPem>[]) => T): T {
  const pems = typeof pinnedKeys === "string" ? [pinnedKeys] : pinnedKeys;
  try {
    if (pems.length === 0) throw new AppError("config_invalid", "no pinned notary key given");
    return verify(pems.map(decodePublicKeyPem));
  } catch (error) {
    if (error instanceof AppError) throw new TlsproofError(error.code, inOptionWords(error.message));
    throw error;
  }
}
