import { AppError } from "../errors.ts";
import { type VerifiedProof, verifyProof as verifyWithKey } from "../proof/verify.ts";
import { TlsproofError } from "./errors.ts";

export type { VerifiedProof } from "../proof/verify.ts";

/**
 * Verifies a proof (its JSON text, or the parsed object) offline with the code of `cli verify`: valid when a
 * notary key among `pinnedKeys` (SPKI PEM) signed it. Throws TlsproofError `proof_invalid` with the reason
 * (for several keys, the reason given against the first), or `config_invalid` for a pinned key that is not
 * a valid key.
 */
export function verifyProof(proof: unknown, pinnedKeys: string | readonly string[]): VerifiedProof {
  const keys = typeof pinnedKeys === "string" ? [pinnedKeys] : pinnedKeys;
  if (keys.length === 0) throw new TlsproofError("config_invalid", "no pinned notary key given");
  let firstError: AppError | undefined;
  for (const key of keys) {
    try {
      return verifyWithKey(proof, key);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code !== "proof_invalid") throw new TlsproofError(error.code, error.message);
      firstError ??= error;
    }
  }
  throw new TlsproofError("proof_invalid", firstError!.message);
}
