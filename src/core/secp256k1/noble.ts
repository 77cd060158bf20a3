/** The @noble/curves adapter (ecdsa.ts): for bundles that cannot load libsecp256k1's wasm (the browser's). */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { concatBytes } from "@noble/hashes/utils.js";
import type { Secp256k1Ecdsa } from "./ecdsa.ts";

const COMPACT = { prehash: false, lowS: true, format: "compact" } as const;

export const ecdsa: Secp256k1Ecdsa = {
  sign: (digest, secretKey) => secp256k1.sign(digest, secretKey, COMPACT),
  verify(signature, digest, publicKey) {
    try {
      return secp256k1.verify(signature, digest, publicKey, COMPACT);
    } catch {
      return false;
    }
  },
  signRecoverable(digest, secretKey) {
    // noble's "recovered" layout is recovery ‖ r ‖ s.
    const recovered = secp256k1.sign(digest, secretKey, { prehash: false, format: "recovered" });
    const recovery = recovered[0];
    if (recovery !== 0 && recovery !== 1) throw new Error("secp256k1: a recovery id above 1");
    return { signature: recovered.subarray(1), recovery };
  },
  recover(signature, recovery, digest) {
    try {
      return secp256k1.Signature.fromBytes(concatBytes(Uint8Array.of(recovery), signature), "recovered").recoverPublicKey(digest).toBytes(false);
    } catch {
      return undefined;
    }
  },
};
