import { describe, expect, test } from "bun:test";
import { type KeyObject, constants, generateKeyPairSync, sign } from "node:crypto";
import { checkSignature } from "../../src/tls/signatures.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * The signature-scheme rules on real keys and signatures: each scheme verifies only with the key type, hash and
 * padding it names; RSA PKCS#1 v1.5 only in TLS 1.2; TLS 1.3 binds an ECDSA scheme to its curve; SHA-1 and unknown
 * schemes are refused.
 */

const data = new TextEncoder().encode("client_random + server_random + params, or the CertificateVerify content");
const ec = (namedCurve: string) => generateKeyPairSync("ec", { namedCurve });
const p256 = ec("P-256");
const p384 = ec("P-384");
const p521 = ec("P-521");
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ed25519 = generateKeyPairSync("ed25519");

const pss = (hash: string, saltLength: number) => new Uint8Array(sign(hash, data, { key: rsa.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }));
const plain = (hash: string | null, key: KeyObject) => new Uint8Array(sign(hash, data, key));
const flipped = (signature: Uint8Array) => signature.map((byte, i) => (i === signature.length - 1 ? byte ^ 1 : byte));

describe("each accepted scheme verifies its own signature", () => {
  test.each([
    ["ecdsa_secp256r1_sha256", 0x0403, p256.publicKey, () => plain("sha256", p256.privateKey)],
    ["ecdsa_secp384r1_sha384", 0x0503, p384.publicKey, () => plain("sha384", p384.privateKey)],
    ["ecdsa_secp521r1_sha512", 0x0603, p521.publicKey, () => plain("sha512", p521.privateKey)],
    ["rsa_pss_rsae_sha256", 0x0804, rsa.publicKey, () => pss("sha256", 32)],
    ["rsa_pss_rsae_sha384", 0x0805, rsa.publicKey, () => pss("sha384", 48)],
    ["rsa_pss_rsae_sha512", 0x0806, rsa.publicKey, () => pss("sha512", 64)],
    ["ed25519", 0x0807, ed25519.publicKey, () => plain(null, ed25519.privateKey)],
  ] as const)("%s, in TLS 1.3 and 1.2; one bit changed does not verify", (_name, scheme, key, signed) => {
    const signature = signed();
    for (const version of ["TLS1.3", "TLS1.2"] as const) {
      expect(() => checkSignature(key, scheme, data, signature, version, "CertificateVerify")).not.toThrow();
      expectRefusal(() => checkSignature(key, scheme, data, flipped(signature), version, "CertificateVerify"), "tls_untrusted", /^the server's CertificateVerify signature does not verify with its certificate's key$/);
    }
  });

  test.each([
    ["rsa_pkcs1_sha256", 0x0401, "sha256"],
    ["rsa_pkcs1_sha384", 0x0501, "sha384"],
    ["rsa_pkcs1_sha512", 0x0601, "sha512"],
  ] as const)("%s in TLS 1.2 only", (_name, scheme, hash) => {
    const signature = plain(hash, rsa.privateKey);
    expect(() => checkSignature(rsa.publicKey, scheme, data, signature, "TLS1.2", "ServerKeyExchange")).not.toThrow();
    expectRefusal(
      () => checkSignature(rsa.publicKey, scheme, data, signature, "TLS1.3", "CertificateVerify"),
      "tls_unsupported",
      new RegExp(`^the server signed its CertificateVerify with signature scheme 0x0${scheme.toString(16)}, which proxy mode does not accept$`),
    );
  });
});

describe("what a scheme binds", () => {
  test("the hash: a signature over another hash than the scheme's does not verify", () => {
    expectRefusal(() => checkSignature(p256.publicKey, 0x0403, data, plain("sha384", p256.privateKey), "TLS1.2", "ServerKeyExchange"), "tls_untrusted", /^the server's ServerKeyExchange signature does not verify/);
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0401, data, plain("sha512", rsa.privateKey), "TLS1.2", "ServerKeyExchange"), "tls_untrusted", /does not verify/);
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0805, data, pss("sha256", 32), "TLS1.3", "CertificateVerify"), "tls_untrusted", /does not verify/);
  });

  test("RSA-PSS: the salt as long as the hash, and PSS and PKCS#1 v1.5 not taken for each other", () => {
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0804, data, pss("sha256", 20), "TLS1.3", "CertificateVerify"), "tls_untrusted", /does not verify/);
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0804, data, plain("sha256", rsa.privateKey), "TLS1.3", "CertificateVerify"), "tls_untrusted", /does not verify/);
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0401, data, pss("sha256", 32), "TLS1.2", "ServerKeyExchange"), "tls_untrusted", /does not verify/);
  });

  test("the key type: a scheme for another kind of key than the certificate's", () => {
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0403, data, plain("sha256", p256.privateKey), "TLS1.3", "CertificateVerify"), "tls_untrusted", /^the server's CertificateVerify signature scheme 0x0403 does not fit its certificate's rsa key$/);
    expectRefusal(() => checkSignature(p256.publicKey, 0x0804, data, pss("sha256", 32), "TLS1.3", "CertificateVerify"), "tls_untrusted", /^the server's CertificateVerify signature scheme 0x0804 does not fit its certificate's ec key$/);
    expectRefusal(() => checkSignature(ed25519.publicKey, 0x0809, data, pss("sha256", 32), "TLS1.3", "CertificateVerify"), "tls_untrusted", /scheme 0x0809 does not fit its certificate's ed25519 key$/);
    expectRefusal(() => checkSignature(rsa.publicKey, 0x0808, data, new Uint8Array(114), "TLS1.3", "CertificateVerify"), "tls_untrusted", /scheme 0x0808 does not fit its certificate's rsa key$/);
  });

  test.each([
    ["a P-256 key under the P-384 scheme", 0x0503, "sha384", p256],
    ["a P-384 key under the P-256 scheme", 0x0403, "sha256", p384],
    ["a P-256 key under the P-521 scheme", 0x0603, "sha512", p256],
  ] as const)("the curve, in TLS 1.3: %s; TLS 1.2 names no curve", (_name, scheme, hash, pair) => {
    const signature = plain(hash, pair.privateKey);
    expectRefusal(
      () => checkSignature(pair.publicKey, scheme, data, signature, "TLS1.3", "CertificateVerify"),
      "tls_untrusted",
      new RegExp(`^the server's CertificateVerify signature scheme 0x0${scheme.toString(16)} does not fit its certificate's curve$`),
    );
    expect(() => checkSignature(pair.publicKey, scheme, data, signature, "TLS1.2", "ServerKeyExchange")).not.toThrow();
  });

  test("the RSASSA-PSS key schemes need an RSASSA-PSS key, not an rsaEncryption one", () => {
    for (const scheme of [0x0809, 0x080a, 0x080b]) {
      expectRefusal(() => checkSignature(rsa.publicKey, scheme, data, pss("sha256", 32), "TLS1.3", "CertificateVerify"), "tls_untrusted", new RegExp(`^the server's CertificateVerify signature scheme 0x0${scheme.toString(16)} does not fit its certificate's rsa key$`));
    }
  });

  test("SHA-1 and unknown schemes are refused in both versions", () => {
    for (const scheme of [0x0201, 0x0203, 0x0303, 0xfefe]) {
      for (const version of ["TLS1.2", "TLS1.3"] as const) {
        expectRefusal(() => checkSignature(p256.publicKey, scheme, data, plain("sha256", p256.privateKey), version, "ServerKeyExchange"), "tls_unsupported", /^the server signed its ServerKeyExchange with signature scheme 0x[0-9a-f]{4}, which proxy mode does not accept$/);
      }
    }
  });

  test("a signature that is not even well-formed does not verify", () => {
    expectRefusal(() => checkSignature(p256.publicKey, 0x0403, data, Uint8Array.of(0x30, 0x02, 0x05, 0x00), "TLS1.3", "CertificateVerify"), "tls_untrusted", /does not verify/);
    expectRefusal(() => checkSignature(ed25519.publicKey, 0x0807, data, new Uint8Array(3), "TLS1.3", "CertificateVerify"), "tls_untrusted", /does not verify/);
  });
});
