/**
 * Checking the server's handshake signature with its certificate's key, by SignatureScheme (RFC 8446 §4.2.3):
 * RSA PKCS#1 v1.5 (TLS 1.2 only), RSA-PSS with salt = hash length (rsae: an rsaEncryption key; pss: an RSASSA-PSS
 * key), ECDSA (DER signature; TLS 1.3 binds the curve to the hash), Ed25519/Ed448. SHA-1 and unknown schemes are
 * refused.
 */
import { type KeyObject, constants, verify } from "node:crypto";
import { AppError } from "../core/errors.ts";
import type { TlsVersionName } from "./suites.ts";
import { hex16 } from "./wire.ts";

interface Scheme {
  hash: "sha256" | "sha384" | "sha512" | null;
  keyType: "rsa" | "rsa-pss" | "ec" | "ed25519" | "ed448";
  padding?: "pkcs1" | "pss";
  /** TLS 1.3's curve for an ECDSA scheme (node:crypto's name). */
  curve?: string;
}

const SCHEMES: ReadonlyMap<number, Scheme> = new Map<number, Scheme>([
  [0x0401, { hash: "sha256", keyType: "rsa", padding: "pkcs1" }],
  [0x0501, { hash: "sha384", keyType: "rsa", padding: "pkcs1" }],
  [0x0601, { hash: "sha512", keyType: "rsa", padding: "pkcs1" }],
  [0x0403, { hash: "sha256", keyType: "ec", curve: "prime256v1" }],
  [0x0503, { hash: "sha384", keyType: "ec", curve: "secp384r1" }],
  [0x0603, { hash: "sha512", keyType: "ec", curve: "secp521r1" }],
  [0x0804, { hash: "sha256", keyType: "rsa", padding: "pss" }],
  [0x0805, { hash: "sha384", keyType: "rsa", padding: "pss" }],
  [0x0806, { hash: "sha512", keyType: "rsa", padding: "pss" }],
  [0x0809, { hash: "sha256", keyType: "rsa-pss", padding: "pss" }],
  [0x080a, { hash: "sha384", keyType: "rsa-pss", padding: "pss" }],
  [0x080b, { hash: "sha512", keyType: "rsa-pss", padding: "pss" }],
  [0x0807, { hash: null, keyType: "ed25519" }],
  [0x0808, { hash: null, keyType: "ed448" }],
]);

/**
 * Every scheme checked here, preferred first: what a TLS 1.3 client offers in signature_algorithms (RSA PKCS#1
 * v1.5 only for the certificates' own signatures, which RFC 8446 §4.2.3 allows; never for CertificateVerify).
 */
export const SIGNATURE_SCHEMES: readonly number[] = [0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x0804, 0x0805, 0x0806, 0x0809, 0x080a, 0x080b, 0x0401, 0x0501, 0x0601];

const HASH_LENGTH = { sha256: 32, sha384: 48, sha512: 64 } as const;

/** Throws unless `signature` is the certificate key's signature of `data` under `schemeId`. */
export function checkSignature(
  key: KeyObject,
  schemeId: number,
  data: Uint8Array,
  signature: Uint8Array,
  version: TlsVersionName,
  what: string,
): void {
  const scheme = SCHEMES.get(schemeId);
  if (!scheme || (version === "TLS1.3" && scheme.padding === "pkcs1")) {
    throw new AppError("tls_unsupported", `the server signed its ${what} with signature scheme ${hex16(schemeId)}, which proxy mode does not accept`);
  }
  if (key.asymmetricKeyType !== scheme.keyType) {
    throw new AppError("tls_untrusted", `the server's ${what} signature scheme ${hex16(schemeId)} does not fit its certificate's ${key.asymmetricKeyType} key`);
  }
  if (version === "TLS1.3" && scheme.curve && key.asymmetricKeyDetails?.namedCurve !== scheme.curve) {
    throw new AppError("tls_untrusted", `the server's ${what} signature scheme ${hex16(schemeId)} does not fit its certificate's curve`);
  }
  const options =
    scheme.padding === "pss" && scheme.hash
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: HASH_LENGTH[scheme.hash] }
      : scheme.padding === "pkcs1"
        ? { key, padding: constants.RSA_PKCS1_PADDING }
        : key;
  let valid: boolean;
  try {
    valid = verify(scheme.hash, data, options, signature);
  } catch {
    valid = false;
  }
  if (!valid) throw new AppError("tls_untrusted", `the server's ${what} signature does not verify with its certificate's key`);
}
