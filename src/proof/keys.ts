/**
 * Notary keys: generation and the PEM forms openssl uses, so operators can make, inspect and convert
 * keys with standard tools. Private keys: PKCS#8 "PRIVATE KEY" (written and read) or SEC1
 * "EC PRIVATE KEY" (read). Public keys: SPKI "PUBLIC KEY". Only named curves secp256k1 and
 * secp256r1 (P-256). The DER reader is strict (definite, minimal lengths) and throws AppError, never
 * a crash, on anything it does not understand.
 */
import { readFileSync } from "node:fs";
import { sha256 } from "../core/sha256.ts";
import { bytesToHex } from "@noble/hashes/utils.js";
import { base64ToBytes, bytesToBase64, sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import { DER_TAG as TAG, type Tlv, decodeOid, derInteger, derOid as encodeOid, derReader, derTlv as tlv } from "../core/der.ts";
import { curveOf } from "./curves.ts";
import type { SignatureAlgorithm } from "./format.ts";

export interface NotaryKey {
  algorithm: SignatureAlgorithm;
  /** 32-byte secret scalar. */
  privateKey: Uint8Array;
  /** SPKI PEM of the matching public key. */
  publicKeyPem: string;
}

export interface PublicKey {
  algorithm: SignatureAlgorithm;
  /** Uncompressed SEC1 point (0x04 || x || y): one encoding per key, so keys compare byte-wise. */
  point: Uint8Array;
}

const OID_EC_PUBLIC_KEY = "1.2.840.10045.2.1";
const curveOids: Record<SignatureAlgorithm, string> = {
  secp256k1: "1.3.132.0.10",
  secp256r1: "1.2.840.10045.3.1.7",
};
const SECRET_LENGTH = 32;

const invalid = (reason: string): AppError => new AppError("config_invalid", reason);

// ---- DER ----

const keyDer = derReader("key", invalid);

function algorithmOfCurveOid(content: Uint8Array): SignatureAlgorithm {
  const oid = decodeOid(content);
  const algorithm = (Object.keys(curveOids) as SignatureAlgorithm[]).find((name) => curveOids[name] === oid);
  if (!algorithm) throw invalid(`unsupported curve ${oid} (expected secp256k1 or secp256r1)`);
  return algorithm;
}

/** AlgorithmIdentifier { id-ecPublicKey, namedCurve } → the curve. */
function readEcAlgorithm(item: Tlv | undefined): SignatureAlgorithm {
  const [kind, curve] = keyDer.all(keyDer.expect(item, TAG.sequence, "an AlgorithmIdentifier"));
  if (decodeOid(keyDer.expect(kind, TAG.oid, "an algorithm OID")) !== OID_EC_PUBLIC_KEY) throw invalid("not an EC key");
  return algorithmOfCurveOid(keyDer.expect(curve, TAG.oid, "a named curve"));
}

const ecAlgorithm = (algorithm: SignatureAlgorithm) =>
  tlv(TAG.sequence, encodeOid(OID_EC_PUBLIC_KEY), encodeOid(curveOids[algorithm]));

// ---- PEM ----

function pemBlocks(text: string): Map<string, Uint8Array> {
  const blocks = new Map<string, Uint8Array>();
  for (const [, label = "", body = ""] of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([^-]*)-----END \1-----/g)) {
    const base64 = body.replace(/\s+/g, "");
    if (/^[A-Za-z0-9+/]*={0,2}$/.test(base64) && base64.length % 4 === 0 && !blocks.has(label)) {
      const der = base64ToBytes(base64);
      if (der) blocks.set(label, der);
    }
  }
  return blocks;
}

export function pem(label: string, der: Uint8Array): string {
  const lines = bytesToBase64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

// ---- keys ----

/** A curve point in any SEC1 form, validated, as the uncompressed encoding. */
function normalizePoint(algorithm: SignatureAlgorithm, bytes: Uint8Array): Uint8Array {
  try {
    return curveOf(algorithm).Point.fromBytes(bytes).toBytes(false);
  } catch {
    throw invalid(`not a valid ${algorithm} public key point`);
  }
}

export function spkiDer(key: PublicKey): Uint8Array {
  return tlv(TAG.sequence, ecAlgorithm(key.algorithm), tlv(TAG.bitString, Uint8Array.of(0), key.point));
}

export function encodePublicKeyPem(key: PublicKey): string {
  return pem("PUBLIC KEY", spkiDer(key));
}

function notaryKeyFromSecret(algorithm: SignatureAlgorithm, secret: Uint8Array): NotaryKey {
  if (secret.length > SECRET_LENGTH) throw invalid("private key is longer than 32 bytes");
  const privateKey = new Uint8Array(SECRET_LENGTH);
  privateKey.set(secret, SECRET_LENGTH - secret.length);
  const curve = curveOf(algorithm);
  if (!curve.utils.isValidSecretKey(privateKey)) throw invalid(`private key is out of range for ${algorithm}`);
  return { algorithm, privateKey, publicKeyPem: encodePublicKeyPem({ algorithm, point: curve.getPublicKey(privateKey, false) }) };
}

export function generateKey(algorithm: SignatureAlgorithm): NotaryKey {
  return notaryKeyFromSecret(algorithm, curveOf(algorithm).utils.randomSecretKey());
}

/** PKCS#8 PEM, holding an RFC 5915 ECPrivateKey with the public key, as openssl writes it. */
export function encodePrivateKeyPem(key: NotaryKey): string {
  const point = curveOf(key.algorithm).getPublicKey(key.privateKey, false);
  const ecPrivateKey = tlv(
    TAG.sequence,
    derInteger(1),
    tlv(TAG.octetString, key.privateKey),
    tlv(TAG.explicit1, tlv(TAG.bitString, Uint8Array.of(0), point)),
  );
  return pem("PRIVATE KEY", tlv(TAG.sequence, derInteger(0), ecAlgorithm(key.algorithm), tlv(TAG.octetString, ecPrivateKey)));
}

/** Bit string content with no unused bits → its bytes. */
function bitStringBytes(content: Uint8Array): Uint8Array {
  if (content[0] !== 0) throw invalid("malformed key: bad BIT STRING");
  return content.subarray(1);
}

/**
 * RFC 5915 ECPrivateKey. `outerAlgorithm` comes from PKCS#8; SEC1 files carry the curve inside.
 * An embedded public key must match the secret (catches corrupted files).
 */
function readEcPrivateKey(der: Uint8Array, outerAlgorithm?: SignatureAlgorithm): NotaryKey {
  const [version, secret, ...optional] = keyDer.sequence(der, "EC private key");
  if (keyDer.expect(version, TAG.integer, "a version")[0] !== 1) throw invalid("unsupported EC private key version");
  const secretBytes = keyDer.expect(secret, TAG.octetString, "the private key bytes");
  const params = optional.find((item) => item.tag === TAG.explicit0);
  const innerAlgorithm = params ? algorithmOfCurveOid(keyDer.expect(keyDer.all(params.content)[0], TAG.oid, "a named curve")) : undefined;
  if (outerAlgorithm && innerAlgorithm && outerAlgorithm !== innerAlgorithm) throw invalid("private key names two different curves");
  const algorithm = outerAlgorithm ?? innerAlgorithm;
  if (!algorithm) throw invalid("EC private key does not name its curve");
  const key = notaryKeyFromSecret(algorithm, secretBytes);
  const embedded = optional.find((item) => item.tag === TAG.explicit1);
  if (embedded) {
    const point = normalizePoint(algorithm, bitStringBytes(keyDer.expect(keyDer.all(embedded.content)[0], TAG.bitString, "a public key")));
    if (!sameBytes(point, curveOf(algorithm).getPublicKey(key.privateKey, false))) {
      throw invalid("embedded public key does not match the private key");
    }
  }
  return key;
}

/** A PKCS#8 "PRIVATE KEY" or SEC1 "EC PRIVATE KEY" PEM. Throws AppError("config_invalid") with the reason. */
export function decodePrivateKeyPem(text: string): NotaryKey {
  const blocks = pemBlocks(text);
  const pkcs8 = blocks.get("PRIVATE KEY");
  if (pkcs8) {
    const [version, algorithm, privateKey] = keyDer.sequence(pkcs8, "PKCS#8 private key");
    const versionNumber = keyDer.expect(version, TAG.integer, "a version")[0];
    if (versionNumber !== 0 && versionNumber !== 1) throw invalid("unsupported PKCS#8 version");
    return readEcPrivateKey(keyDer.expect(privateKey, TAG.octetString, "the private key"), readEcAlgorithm(algorithm));
  }
  const sec1 = blocks.get("EC PRIVATE KEY");
  if (sec1) return readEcPrivateKey(sec1);
  if (blocks.has("ENCRYPTED PRIVATE KEY")) throw invalid("encrypted private keys are not supported");
  throw invalid('not a PEM private key (expected "PRIVATE KEY" or "EC PRIVATE KEY")');
}

/** An SPKI "PUBLIC KEY" PEM. Throws AppError("config_invalid") with the reason. */
export function decodePublicKeyPem(text: string): PublicKey {
  const der = pemBlocks(text).get("PUBLIC KEY");
  if (!der) throw invalid('not a PEM public key (expected "PUBLIC KEY")');
  const [algorithmItem, keyItem, ...rest] = keyDer.sequence(der, "public key");
  if (rest.length > 0) throw invalid("malformed public key: unexpected fields");
  const algorithm = readEcAlgorithm(algorithmItem);
  return { algorithm, point: normalizePoint(algorithm, bitStringBytes(keyDer.expect(keyItem, TAG.bitString, "a public key BIT STRING"))) };
}

export function samePublicKey(a: PublicKey, b: PublicKey): boolean {
  return a.algorithm === b.algorithm && sameBytes(a.point, b.point);
}

/** "sha256:<hex>" of the key's SPKI DER (uncompressed point), as `openssl pkey -pubin -outform DER | sha256sum`. */
export function publicKeyFingerprint(key: PublicKey): string {
  return `sha256:${bytesToHex(sha256(spkiDer(key)))}`;
}

function readKeyFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read key file ${path}: ${(error as Error).message}`);
  }
}

/** Both readers name the file in the error, so one line tells the operator what to fix. */
function decodeFile<T>(path: string, decode: (text: string) => T): T {
  const text = readKeyFile(path);
  try {
    return decode(text);
  } catch (error) {
    throw error instanceof AppError ? new AppError(error.code, `key file ${path}: ${error.message}`) : error;
  }
}

export const readPrivateKeyFile = (path: string): NotaryKey => decodeFile(path, decodePrivateKeyPem);
export const readPublicKeyFile = (path: string): PublicKey => decodeFile(path, decodePublicKeyPem);

/**
 * Every SPKI "PUBLIC KEY" PEM block of a text, in order (the keys of several notaries, concatenated like a
 * CA bundle). A text without one is refused as decodePublicKeyPem refuses it.
 */
export function decodePublicKeysPem(text: string): PublicKey[] {
  const blocks = text.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g);
  return blocks ? blocks.map(decodePublicKeyPem) : [decodePublicKeyPem(text)];
}

export const readPublicKeysFile = (path: string): PublicKey[] => decodeFile(path, decodePublicKeysPem);
