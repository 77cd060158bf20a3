import { expect, test } from "bun:test";
import { cipherSuiteOf } from "../../src/tls/suites.ts";
import { expectRefusal } from "./support/refusal.ts";

/** The accepted suites: ECDHE with an AEAD, their key and IV lengths as the key schedules need them. */

test("each accepted suite, by id and version, with its AEAD, hash and lengths", () => {
  const row = (id: number, version: "TLS1.2" | "TLS1.3") => {
    const { name, aead, hash, keyLength, ivLength } = cipherSuiteOf(id, version);
    return [name, aead, hash, keyLength, ivLength];
  };
  expect([
    row(0x1301, "TLS1.3"),
    row(0x1302, "TLS1.3"),
    row(0x1303, "TLS1.3"),
    row(0xc02b, "TLS1.2"),
    row(0xc02c, "TLS1.2"),
    row(0xc02f, "TLS1.2"),
    row(0xc030, "TLS1.2"),
    row(0xcca8, "TLS1.2"),
    row(0xcca9, "TLS1.2"),
  ]).toEqual([
    ["TLS_AES_128_GCM_SHA256", "aes-128-gcm", "sha256", 16, 12],
    ["TLS_AES_256_GCM_SHA384", "aes-256-gcm", "sha384", 32, 12],
    ["TLS_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", "sha256", 32, 12],
    ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "aes-128-gcm", "sha256", 16, 4],
    ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "aes-256-gcm", "sha384", 32, 4],
    ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "aes-128-gcm", "sha256", 16, 4],
    ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "aes-256-gcm", "sha384", 32, 4],
    ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", "sha256", 32, 12],
    ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", "sha256", 32, 12],
  ]);
});

test("a suite of the other version, or any other suite, is refused by name of its id", () => {
  expectRefusal(() => cipherSuiteOf(0x1301, "TLS1.2"), "tls_unsupported", /^proxy mode accepts only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305; the server chose cipher suite 0x1301 for TLS1\.2$/);
  expectRefusal(() => cipherSuiteOf(0xc02b, "TLS1.3"), "tls_unsupported", /cipher suite 0xc02b for TLS1\.3$/);
  expectRefusal(() => cipherSuiteOf(0x009c, "TLS1.2"), "tls_unsupported", /cipher suite 0x009c for TLS1\.2$/);
});
