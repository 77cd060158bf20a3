/**
 * Ethereum signatures over secp256k1, signed as r ‖ s ‖ v with v = 27 + recovery: of any 32-byte digest (the
 * notary's EIP-712 attestations), and of personal messages (EIP-191), the scheme Streamr v32 messages use:
 * keccak256("\x19Ethereum Signed Message:\n" + byteLength + message).
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { keccak256 } from "./keccak/index.ts";
import { ecdsa } from "./secp256k1/index.ts";

export type Address = `0x${string}`;

const SIGNATURE_HEX = /^0x[0-9a-fA-F]{130}$/;

export function personalMessageHash(message: string | Uint8Array): Uint8Array {
  const bytes = typeof message === "string" ? utf8ToBytes(message) : message;
  return keccak256(`\x19Ethereum Signed Message:\n${bytes.length}`, bytes);
}

/** Lower-case 0x address of an uncompressed (65-byte) or compressed public key. */
export function addressOfPublicKey(publicKey: Uint8Array): Address {
  const uncompressed = publicKey.length === 65 ? publicKey : secp256k1.Point.fromBytes(publicKey).toBytes(false);
  return `0x${bytesToHex(keccak256(uncompressed.subarray(1)).subarray(12))}`;
}

export function addressOfSecretKey(secretKey: Uint8Array): Address {
  return addressOfPublicKey(secp256k1.getPublicKey(secretKey, false));
}

/** 0x-prefixed 65-byte hex signature (r ‖ s ‖ v, low s) of a 32-byte digest, as Ethereum wallets produce it. */
export function signDigest(digest: Uint8Array, secretKey: Uint8Array): string {
  const { signature, recovery } = ecdsa.signRecoverable(digest, secretKey);
  return `0x${bytesToHex(signature)}${(27 + recovery).toString(16)}`;
}

/** The address that signed a 32-byte digest, or undefined when the signature is malformed or recovers nothing. */
export function recoverDigestSigner(digest: Uint8Array, signature: string): Address | undefined {
  if (!SIGNATURE_HEX.test(signature)) return undefined;
  const bytes = hexToBytes(signature.slice(2));
  const v = bytes[64] ?? 0;
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) return undefined;
  const publicKey = ecdsa.recover(bytes.subarray(0, 64), recovery, digest);
  return publicKey && addressOfPublicKey(publicKey);
}

export const signPersonalMessage = (message: string | Uint8Array, secretKey: Uint8Array): string =>
  signDigest(personalMessageHash(message), secretKey);

export const recoverPersonalMessageSigner = (message: string | Uint8Array, signature: string): Address | undefined =>
  recoverDigestSigner(personalMessageHash(message), signature);
