/** The @noble/curves adapter (ecdsa.ts): for bundles that cannot load libsecp256k1's wasm (the browser's). */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { concatBytes } from "@noble/hashes/utils.js";
import { recoveryIdOf, type Secp256k1Ecdsa, undefinedOnThrow } from "./ecdsa.ts";

const COMPACT = { prehash: false, lowS: true, format: "compact" } as const;

export const ecdsa: Secp256k1Ecdsa = {
  sign: (digest, secretKey) => secp256k1.sign(digest, secretKey, COMPACT),
  verify: (signature, digest, publicKey) => undefinedOnThrow(() => secp256k1.verify(signature, digest, publicKey, COMPACT)) ?? false,
  signRecoverable(digest, secretKey) {
    // noble's "recovered" layout is recovery ‖ r ‖ s.
    const recovered = secp256k1.sign(digest, secretKey, { prehash: false, format: "recovered" });
    return { signature: recovered.subarray(1), recovery: recoveryIdOf(recovered[0]!) };
  },
  recover: (signature, recovery, digest) =>
    undefinedOnThrow(() => secp256k1.Signature.fromBytes(concatBytes(Uint8Array.of(recovery), signature), "recovered").recoverPublicKey(digest).toBytes(false)),
};
