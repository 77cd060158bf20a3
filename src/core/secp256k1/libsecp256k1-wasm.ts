/** The libsecp256k1 adapter (ecdsa.ts) through tiny-secp256k1's wasm build of it, where no prebuilt addon loads (libsecp256k1.ts); in the binary, src/core/build-plugins.ts loads its wasm. */
import * as wasm from "tiny-secp256k1";
import type { Secp256k1Ecdsa } from "./ecdsa.ts";

/** Its input checks throw on malformed input: read as "not a valid signature". */
function orUndefined<T>(work: () => T | null): T | undefined {
  try {
    return work() ?? undefined;
  } catch {
    return undefined;
  }
}

export const ecdsa: Secp256k1Ecdsa = {
  sign: (digest, secretKey) => wasm.sign(digest, secretKey),
  // strict: a high-s signature is refused, not normalized first.
  verify: (signature, digest, publicKey) => orUndefined(() => wasm.verify(digest, publicKey, signature, true)) ?? false,
  signRecoverable(digest, secretKey) {
    const { signature, recoveryId } = wasm.signRecoverable(digest, secretKey);
    // Ids 2 and 3 need r ≥ n, which a signature of this curve reaches with negligible probability.
    if (recoveryId > 1) throw new Error("secp256k1: a recovery id above 1");
    return { signature, recovery: recoveryId as 0 | 1 };
  },
  recover: (signature, recovery, digest) => orUndefined(() => wasm.recover(digest, signature, recovery, false)),
};
