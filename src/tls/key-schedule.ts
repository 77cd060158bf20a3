/**
 * Key derivation. TLS 1.3 (RFC 8446 §7.1, §7.3, §4.4.4): HKDF-Expand-Label(secret, label, context, length) expands
 * with info = uint16 length, "tls13 " + label (1-byte length), context (1-byte length); a traffic secret gives
 * key = Expand-Label("key", "", key length), iv = Expand-Label("iv", "", 12), finished_key = Expand-Label("finished",
 * "", hash length). TLS 1.2 (RFC 5246 §5, §6.3): PRF = P_hash(secret, label + seed), key_block = PRF(master,
 * "key expansion", server_random + client_random) cut into client MAC, server MAC (empty for AEAD), client key,
 * server key, client IV, server IV.
 */
import { createHash, createHmac } from "node:crypto";
import { expand } from "@noble/hashes/hkdf.js";
import { sha256, sha384 } from "@noble/hashes/sha2.js";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import type { CipherSuite, HashName } from "./suites.ts";
import { uint16Bytes } from "./wire.ts";

export const hashLength = (hash: HashName): number => (hash === "sha256" ? 32 : 48);

export const digest = (hash: HashName, ...parts: Uint8Array[]): Uint8Array => {
  const h = createHash(hash);
  for (const part of parts) h.update(part);
  return new Uint8Array(h.digest());
};

export const hmac = (hash: HashName, key: Uint8Array, ...parts: Uint8Array[]): Uint8Array => {
  const h = createHmac(hash, key);
  for (const part of parts) h.update(part);
  return new Uint8Array(h.digest());
};

export function hkdfExpandLabel(hash: HashName, secret: Uint8Array, label: string, context: Uint8Array, length: number): Uint8Array {
  const fullLabel = utf8ToBytes(`tls13 ${label}`);
  const info = concatBytes(uint16Bytes(length), Uint8Array.of(fullLabel.length), fullLabel, Uint8Array.of(context.length), context);
  return expand(hash === "sha256" ? sha256 : sha384, secret, info, length);
}

export interface TrafficKeys {
  key: Uint8Array;
  iv: Uint8Array;
}

/** TLS 1.3 record keys of one traffic secret. */
export const trafficKeys = (suite: CipherSuite, secret: Uint8Array): TrafficKeys => ({
  key: hkdfExpandLabel(suite.hash, secret, "key", new Uint8Array(0), suite.keyLength),
  iv: hkdfExpandLabel(suite.hash, secret, "iv", new Uint8Array(0), 12),
});

/** TLS 1.3 Finished verify_data for a handshake traffic secret and the transcript hash before Finished. */
export function finishedVerifyData(hash: HashName, handshakeSecret: Uint8Array, transcriptHash: Uint8Array): Uint8Array {
  const finishedKey = hkdfExpandLabel(hash, handshakeSecret, "finished", new Uint8Array(0), hashLength(hash));
  return hmac(hash, finishedKey, transcriptHash);
}

/** TLS 1.2 PRF(secret, label, seed) of `length` bytes. */
export function prf12(hash: HashName, secret: Uint8Array, label: string, seed: Uint8Array, length: number): Uint8Array {
  const labelSeed = concatBytes(utf8ToBytes(label), seed);
  const out = new Uint8Array(length);
  let a: Uint8Array = labelSeed;
  for (let filled = 0; filled < length; ) {
    a = hmac(hash, secret, a);
    const chunk = hmac(hash, secret, a, labelSeed);
    out.set(chunk.subarray(0, Math.min(chunk.length, length - filled)), filled);
    filled += chunk.length;
  }
  return out;
}

/** TLS 1.2 write keys of both sides from the master secret (AEAD suites: no MAC keys). */
export function keyBlock12(
  suite: CipherSuite,
  masterSecret: Uint8Array,
  clientRandom: Uint8Array,
  serverRandom: Uint8Array,
): { client: TrafficKeys; server: TrafficKeys } {
  const { keyLength: k, ivLength: v } = suite;
  const block = prf12(suite.hash, masterSecret, "key expansion", concatBytes(serverRandom, clientRandom), 2 * (k + v));
  return {
    client: { key: block.slice(0, k), iv: block.slice(2 * k, 2 * k + v) },
    server: { key: block.slice(k, 2 * k), iv: block.slice(2 * k + v, 2 * (k + v)) },
  };
}
