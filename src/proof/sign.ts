/**
 * Proof signatures: ECDSA over SHA-256(canonicalEncoding(version, body)), 64-byte compact r||s with low s,
 * lowercase hex. Low s is required on verify too, so a signature has exactly one valid encoding. The version is
 * signed with the body: a body is checked over the bytes of the version its proof names.
 */
import { sha256 } from "../core/sha256.ts";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { canonicalEncoding } from "./canonical.ts";
import { PROOF_VERSION, type Proof, type ProofBody, type SignatureAlgorithm } from "./format.ts";
import { curveOf } from "./curves.ts";
import { type Secp256k1Ecdsa, ecdsa } from "../core/secp256k1/index.ts";
import { decodePublicKeyPem, type NotaryKey, type PublicKey, samePublicKey } from "./keys.ts";

const signedDigest = (version: string, body: ProofBody): Uint8Array => sha256(canonicalEncoding(version, body));
const ECDSA_OPTIONS = { prehash: false, lowS: true, format: "compact" } as const;

/** Each curve's ECDSA on a digest: secp256k1's through its port (src/core/secp256k1/), P-256's by @noble/curves. */
const ecdsaOf: Record<SignatureAlgorithm, Pick<Secp256k1Ecdsa, "sign" | "verify">> = {
  secp256k1: ecdsa,
  secp256r1: {
    sign: (digest, secretKey) => curveOf("secp256r1").sign(digest, secretKey, ECDSA_OPTIONS),
    verify: (signature, digest, publicKey) => curveOf("secp256r1").verify(signature, digest, publicKey, ECDSA_OPTIONS),
  },
};

/**
 * Signs `body` as a proof of the current version; it must already name this key in `body.notary` (a mismatch would
 * never verify).
 */
export function signProof(body: ProofBody, key: NotaryKey): Proof {
  const own: PublicKey = decodePublicKeyPem(key.publicKeyPem);
  const named = decodePublicKeyPem(body.notary.publicKey);
  if (body.notary.algorithm !== key.algorithm || !samePublicKey(own, named)) {
    throw new Error("signProof: body.notary does not describe the signing key");
  }
  const signature = ecdsaOf[key.algorithm].sign(signedDigest(PROOF_VERSION, body), key.privateKey);
  return { version: PROOF_VERSION, body, signature: bytesToHex(signature) };
}

/** True when `signatureHex` (128 hex digits) is a valid low-s signature by `key` of `body` as a proof of `version`. */
export function signatureMatches(version: string, body: ProofBody, signatureHex: string, key: PublicKey): boolean {
  try {
    return ecdsaOf[key.algorithm].verify(hexToBytes(signatureHex), signedDigest(version, body), key.point);
  } catch {
    return false;
  }
}
