/**
 * Key derivation. TLS 1.3 (RFC 8446 §7.1, §7.3, §4.4.4, §4.6.3): HKDF-Expand-Label(secret, label, context, length)
 * expands with info = uint16 length, "tls13 " + label (1-byte length), context (1-byte length); a traffic secret gives
 * key = Expand-Label("key", "", key length), iv = Expand-Label("iv", "", 12), finished_key = Expand-Label("finished",
 * "", hash length), and after a KeyUpdate the next traffic secret = Expand-Label("traffic upd", "", hash length).
 * Without a PSK the schedule runs: early = Extract(0, 0); handshake = Extract(Derive-Secret(early, "derived", ""),
 * ECDHE); the handshake traffic secrets = Derive-Secret(handshake, "c/s hs traffic", ClientHello..ServerHello);
 * master = Extract(Derive-Secret(handshake, "derived", ""), 0); the application traffic secrets =
 * Derive-Secret(master, "c/s ap traffic", ClientHello..server Finished). TLS 1.2 (RFC 5246 §5, §6.3): PRF = P_hash(secret, label + seed), key_block = PRF(master,
 * "key expansion", server_random + client_random) cut into client MAC, server MAC (empty for AEAD), client key,
 * server key, client IV, server IV.
 */
import { createHash, createHmac } from "node:crypto";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import type { CipherSuite, HashName } from "./suites.ts";
import { uint16Bytes } from "./wire.ts";

const EMPTY = new Uint8Array(0);

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

/** HKDF-Extract (RFC 5869 §2.2) on node:crypto's HMAC, as HKDF-Expand below: many times faster than HMAC in JavaScript. */
const hkdfExtract = (hash: HashName, salt: Uint8Array, inputKey: Uint8Array): Uint8Array => hmac(hash, salt, inputKey);

/** HKDF-Expand (RFC 5869 §2.3): T(i) = HMAC(secret, T(i-1) | info | i), cut to `length`. */
function hkdfExpand(hash: HashName, secret: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let block: Uint8Array = EMPTY;
  for (let filled = 0, i = 1; filled < length; i++) {
    block = hmac(hash, secret, block, info, Uint8Array.of(i));
    out.set(block.subarray(0, Math.min(block.length, length - filled)), filled);
    filled += block.length;
  }
  return out;
}

export function hkdfExpandLabel(hash: HashName, secret: Uint8Array, label: string, context: Uint8Array, length: number): Uint8Array {
  const fullLabel = utf8ToBytes(`tls13 ${label}`);
  const info = concatBytes(uint16Bytes(length), Uint8Array.of(fullLabel.length), fullLabel, Uint8Array.of(context.length), context);
  return hkdfExpand(hash, secret, info, length);
}

/** Derive-Secret(secret, label, messages) with the messages' transcript hash already taken. */
export const deriveSecret = (hash: HashName, secret: Uint8Array, label: string, transcriptHash: Uint8Array): Uint8Array =>
  hkdfExpandLabel(hash, secret, label, transcriptHash, hashLength(hash));

/** The secret a KeyUpdate moves a direction to (RFC 8446 §7.2). */
export const nextTrafficSecret = (hash: HashName, secret: Uint8Array): Uint8Array => hkdfExpandLabel(hash, secret, "traffic upd", EMPTY, hashLength(hash));

export interface HandshakeSecrets {
  client: Uint8Array;
  server: Uint8Array;
  /** The handshake secret itself: what the master secret is drawn from. */
  handshake: Uint8Array;
}

/** The handshake traffic secrets of a full (EC)DHE handshake without PSK, from the hash of ClientHello..ServerHello. */
export function handshakeSecrets(hash: HashName, sharedSecret: Uint8Array, helloHash: Uint8Array): HandshakeSecrets {
  const zeros = new Uint8Array(hashLength(hash));
  const early = hkdfExtract(hash, zeros, zeros);
  const handshake = hkdfExtract(hash, deriveSecret(hash, early, "derived", digest(hash)), sharedSecret);
  return { client: deriveSecret(hash, handshake, "c hs traffic", helloHash), server: deriveSecret(hash, handshake, "s hs traffic", helloHash), handshake };
}

/** The first application traffic secrets, from the handshake secret and the hash of ClientHello..server Finished. */
export function applicationSecrets(hash: HashName, handshakeSecret: Uint8Array, finishedHash: Uint8Array): { client: Uint8Array; server: Uint8Array } {
  const master = hkdfExtract(hash, deriveSecret(hash, handshakeSecret, "derived", digest(hash)), new Uint8Array(hashLength(hash)));
  return { client: deriveSecret(hash, master, "c ap traffic", finishedHash), server: deriveSecret(hash, master, "s ap traffic", finishedHash) };
}

export interface TrafficKeys {
  key: Uint8Array;
  iv: Uint8Array;
}

/** TLS 1.3 record keys of one traffic secret. */
export const trafficKeys = (suite: CipherSuite, secret: Uint8Array): TrafficKeys => ({
  key: hkdfExpandLabel(suite.hash, secret, "key", EMPTY, suite.keyLength),
  iv: hkdfExpandLabel(suite.hash, secret, "iv", EMPTY, 12),
});

/** TLS 1.3 Finished verify_data for a handshake traffic secret and the transcript hash before Finished. */
export function finishedVerifyData(hash: HashName, handshakeSecret: Uint8Array, transcriptHash: Uint8Array): Uint8Array {
  const finishedKey = hkdfExpandLabel(hash, handshakeSecret, "finished", EMPTY, hashLength(hash));
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
