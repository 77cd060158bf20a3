/**
 * The cipher suites proxy mode accepts: ECDHE key exchange (TLS 1.2; TLS 1.3 is always ephemeral unless a PSK is
 * accepted, which is refused elsewhere) with an AEAD cipher. TLS 1.2 GCM suites carry a 4-byte fixed IV and an
 * 8-byte explicit nonce per record (RFC 5288); ChaCha20-Poly1305 a 12-byte IV XORed with the sequence number
 * (RFC 7905). Everything else (CBC, RSA key exchange, anonymous) is refused.
 */
import { AppError } from "../core/errors.ts";
import { hex16 } from "./wire.ts";

export type AeadName = "aes-128-gcm" | "aes-256-gcm" | "chacha20-poly1305";
export type HashName = "sha256" | "sha384";
export type TlsVersionName = "TLS1.2" | "TLS1.3";

export interface CipherSuite {
  id: number;
  /** The IANA name. */
  name: string;
  version: TlsVersionName;
  aead: AeadName;
  /** TLS 1.3: the transcript and HKDF hash; TLS 1.2: the PRF hash. */
  hash: HashName;
  keyLength: number;
  /** TLS 1.3: 12; TLS 1.2: the write IV's length in the key block (4 for GCM, 12 for ChaCha20-Poly1305). */
  ivLength: number;
}

const suite = (id: number, name: string, version: TlsVersionName, aead: AeadName, hash: HashName): CipherSuite => ({
  id,
  name,
  version,
  aead,
  hash,
  keyLength: aead === "aes-128-gcm" ? 16 : 32,
  ivLength: version === "TLS1.3" || aead === "chacha20-poly1305" ? 12 : 4,
});

const SUITES: readonly CipherSuite[] = [
  suite(0x1301, "TLS_AES_128_GCM_SHA256", "TLS1.3", "aes-128-gcm", "sha256"),
  suite(0x1302, "TLS_AES_256_GCM_SHA384", "TLS1.3", "aes-256-gcm", "sha384"),
  suite(0x1303, "TLS_CHACHA20_POLY1305_SHA256", "TLS1.3", "chacha20-poly1305", "sha256"),
  suite(0xc02b, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS1.2", "aes-128-gcm", "sha256"),
  suite(0xc02c, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS1.2", "aes-256-gcm", "sha384"),
  suite(0xc02f, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS1.2", "aes-128-gcm", "sha256"),
  suite(0xc030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS1.2", "aes-256-gcm", "sha384"),
  suite(0xcca8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS1.2", "chacha20-poly1305", "sha256"),
  suite(0xcca9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS1.2", "chacha20-poly1305", "sha256"),
];

/** The accepted suite with this id for this version, or a tls_unsupported error naming it. */
export function cipherSuiteOf(id: number, version: TlsVersionName): CipherSuite {
  const found = SUITES.find((s) => s.id === id && s.version === version);
  if (!found) {
    throw new AppError(
      "tls_unsupported",
      `proxy mode accepts only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305; the server chose cipher suite ${hex16(id)} for ${version}`,
    );
  }
  return found;
}
