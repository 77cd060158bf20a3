/**
 * ECDSA over secp256k1 on 32-byte digests, the one port every signature of that curve goes through (proofs, EVM
 * attestations, the store's messages): three adapters, libsecp256k1 as a prebuilt native addon
 * (libsecp256k1-addon.ts) or compiled to wasm (libsecp256k1-wasm.ts, where no addon loads; about eight times faster
 * than JavaScript), which libsecp256k1.ts picks for servers, and @noble/curves (noble.ts, the browser bundles of the
 * client and the viewer, which can load neither). test/core/secp256k1/ecdsa.test.ts holds them to the same answers.
 */

export interface Secp256k1Ecdsa {
  /** r ‖ s (64 bytes), low s, its nonce by RFC 6979 (the same signature from either adapter). */
  sign(digest: Uint8Array, secretKey: Uint8Array): Uint8Array;
  /** True for a low-s r ‖ s signature of `digest` by `publicKey` (33 or 65 bytes); false for anything else, malformed included. */
  verify(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean;
  /** r ‖ s (low s) and the id that recovers the public key from it. */
  signRecoverable(digest: Uint8Array, secretKey: Uint8Array): { signature: Uint8Array; recovery: 0 | 1 };
  /** The uncompressed public key (65 bytes) that made r ‖ s with this recovery id, or undefined when none did. */
  recover(signature: Uint8Array, recovery: 0 | 1, digest: Uint8Array): Uint8Array | undefined;
}

/** The adapters' libraries throw on malformed input: read as "not a valid signature" (undefined). */
export function undefinedOnThrow<T>(work: () => T | null): T | undefined {
  try {
    return work() ?? undefined;
  } catch {
    return undefined;
  }
}

/** A recovery id as the port gives it: ids 2 and 3 need r ≥ n, which a signature of this curve reaches with negligible probability. */
export function recoveryIdOf(id: number): 0 | 1 {
  if (id !== 0 && id !== 1) throw new Error("secp256k1: a recovery id above 1");
  return id;
}
