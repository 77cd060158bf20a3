/**
 * Proof signatures: ECDSA over SHA-256(canonicalEncoding(version, body)), 64-byte compact r||s with low s,
 * lowercase hex. Low s is required on verify too, so a signature has exactly one valid encoding. The version is
 * signed with the body: a body is checked over the bytes of the version its proof names.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { canonicalEncoding } from "./canonical.ts";
import { PROOF_VERSION, type Proof, type ProofBody } from "./format.ts";
import { curveOf } from "./curves.ts";
import { ecdsa } from "../core/secp256k1/index.ts";
import { decodePublicKeyPem, type NotaryKey, type PublicKey, samePublicKey } from "./keys.ts";

const signedDigest = (version: string, body: ProofBody): Uint8Array => sha256(canonicalEncoding(version, body));
const ECDSA_OPTIONS = { prehash: false, lowS: true, format: "compact" } as const;

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
  const digest = signedDigest(PROOF_VERSION, body);
  const signature = key.algorithm === "secp256k1" ? ecdsa.sign(digest, key.privateKey) : curveOf(key.algorithm).sign(digest, key.privateKey, ECDSA_OPTIONS);
  return { version: PROOF_VERSION, body, signature: bytesToHex(signature) };
}

/** True when `signatureHex` (128 hex digits) is a valid low-s signature by `key` of `body` as a proof of `version`. */
export function signatureMatches(version: string, body: ProofBody, signatureHex: string, key: PublicKey): boolean {
  try {
    const signature = hexToBytes(signatureHex);
    const digest = signedDigest(version, body);
    return key.algorithm === "secp256k1" ? ecdsa.verify(signature, digest, key.point) : curveOf(key.algorithm).verify(signature, digest, key.point, ECDSA_OPTIONS);
  } catch {
    return false;
  }
}
