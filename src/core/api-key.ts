import { createHash, timingSafeEqual } from "node:crypto";

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * A check of a presented API key against a list (the prover's PROVER_API_KEYS, the notary's whitelist).
 * Both sides are hashed first so that timingSafeEqual compares equal lengths and the time taken says
 * nothing about the key.
 */
export function apiKeyMatcher(keys: readonly string[]): (presented: string) => boolean {
  const expected = keys.map(digest);
  return (presented) => {
    const given = digest(presented);
    // Every key is compared, so the position of a match does not show in the timing either.
    return expected.reduce((found, key) => timingSafeEqual(key, given) || found, false);
  };
}
