/** The libsecp256k1 adapter (ecdsa.ts) through tiny-secp256k1's wasm build of it, where no prebuilt addon loads (libsecp256k1.ts); in the binary, src/core/build-plugins.ts loads its wasm. */
import * as wasm from "tiny-secp256k1";
import { recoveryIdOf, type Secp256k1Ecdsa, undefinedOnThrow } from "./ecdsa.ts";

export const ecdsa: Secp256k1Ecdsa = {
  sign: (digest, secretKey) => wasm.sign(digest, secretKey),
  // strict: a high-s signature is refused, not normalized first.
  verify: (signature, digest, publicKey) => undefinedOnThrow(() => wasm.verify(digest, publicKey, signature, true)) ?? false,
  signRecoverable(digest, secretKey) {
    const { signature, recoveryId } = wasm.signRecoverable(digest, secretKey);
    return { signature, recovery: recoveryIdOf(recoveryId) };
  },
  recover: (signature, recovery, digest) => undefinedOnThrow(() => wasm.recover(digest, signature, recovery, false)),
};
