import { AppError } from "../errors.ts";
import { decodePublicKeyPem } from "../proof/keys.ts";
import { type VerifiedProof, verifyProof as verifyWithKeys } from "../proof/verify.ts";
import { TlsproofError } from "./errors.ts";

export type { VerifiedProof } from "../proof/verify.ts";

/**
 * Verifies a proof (its JSON text, or the parsed object) offline with the code of `cli verify`: valid when one
 * of the `pinnedKeys` (SPKI PEM) signed it. Throws TlsproofError `proof_invalid` with the reason, or
 * `config_invalid` for a pinned key that is not a valid key.
 */
export function verifyProof(proof: unknown, pinnedKeys: string | readonly string[]): VerifiedProof {
  const pems = typeof pinnedKeys === "string" ? [pinnedKeys] : pinnedKeys;
  try {
    if (pems.length === 0) throw new AppError("config_invalid", "no pinned notary key given");
    return verifyWithKeys(proof, pems.map(decodePublicKeyPem));
  } catch (error) {
    if (error instanceof AppError) throw new TlsproofError(error.code, error.message);
    throw error;
  }
}
