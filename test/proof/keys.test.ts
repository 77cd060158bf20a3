import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../../src/core/errors.ts";
import { curveOf } from "../../src/proof/curves.ts";
import type { SignatureAlgorithm } from "../../src/proof/format.ts";
import {
  decodePrivateKeyPem,
  decodePublicKeyPem,
  encodePrivateKeyPem,
  encodePublicKeyPem,
  generateKey,
  publicKeyFingerprint,
  readPrivateKeyFile,
  readPublicKeyFile,
  samePublicKey,
} from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { canonicalEncoding } from "../../src/proof/canonical.ts";
import { sampleBody, tempDir } from "./fixtures.ts";

const OPENSSL = "/usr/bin/openssl";
const opensslCurve: Record<SignatureAlgorithm, string> = { secp256k1: "secp256k1", secp256r1: "prime256v1" };

function openssl(...args: string[]): string {
  const result = Bun.spawnSync([OPENSSL, ...args], { stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr.toString()}`);
  return result.stdout.toString();
}

function expectAppError(run: () => unknown, code: string, message: string | RegExp): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(code as AppError["code"]);
    expect((error as AppError).message).toMatch(message);
    return;
  }
  throw new Error("expected an AppError");
}

const algorithms: SignatureAlgorithm[] = ["secp256k1", "secp256r1"];

describe.each(algorithms)("%s keys", (algorithm) => {
  test("PEM round trip keeps the key", () => {
    const key = generateKey(algorithm);
    const decoded = decodePrivateKeyPem(encodePrivateKeyPem(key));
    expect(decoded.algorithm).toBe(algorithm);
    expect(decoded.privateKey).toEqual(key.privateKey);
    expect(decoded.publicKeyPem).toBe(key.publicKeyPem);
    expect(decodePublicKeyPem(key.publicKeyPem).point).toEqual(curveOf(algorithm).getPublicKey(key.privateKey, false));
  });

  test("openssl reads the keys we write, and derives the same public key", () => {
    const dir = tempDir();
    const key = generateKey(algorithm);
    writeFileSync(join(dir, "notary.key"), encodePrivateKeyPem(key));
    writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
    expect(openssl("pkey", "-in", join(dir, "notary.key"), "-pubout")).toBe(key.publicKeyPem);
    const privateText = openssl("pkey", "-in", join(dir, "notary.key"), "-noout", "-text");
    expect(privateText).toContain(`ASN1 OID: ${opensslCurve[algorithm]}`);
    expect(privateText.replace(/[\s:]/g, "")).toContain(Buffer.from(key.privateKey).toString("hex"));
    expect(openssl("pkey", "-pubin", "-in", join(dir, "notary.pub"), "-noout", "-text")).toContain(`ASN1 OID: ${opensslCurve[algorithm]}`);
  });

  test("the fingerprint is sha256 of the SPKI DER, as openssl outputs it", () => {
    const dir = tempDir();
    const key = generateKey(algorithm);
    writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
    const der = Bun.spawnSync([OPENSSL, "pkey", "-pubin", "-in", join(dir, "notary.pub"), "-outform", "DER"]).stdout;
    const expected = new Bun.CryptoHasher("sha256").update(der).digest("hex");
    expect(publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem))).toBe(`sha256:${expected}`);
  });

  test("keys made by openssl genpkey (PKCS#8) load and match openssl's public key", () => {
    const dir = tempDir();
    const path = join(dir, "openssl.key");
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", `ec_paramgen_curve:${opensslCurve[algorithm]}`, "-out", path);
    expect(readFileSync(path, "utf8")).toStartWith("-----BEGIN PRIVATE KEY-----");
    const key = readPrivateKeyFile(path);
    expect(key.algorithm).toBe(algorithm);
    expect(key.publicKeyPem).toBe(openssl("pkey", "-in", path, "-pubout"));
  });

  test("SEC1 EC PRIVATE KEY files load, with or without an EC PARAMETERS block first", () => {
    const dir = tempDir();
    const sec1 = join(dir, "sec1.key");
    openssl("ecparam", "-name", opensslCurve[algorithm], "-genkey", "-out", sec1);
    expect(readFileSync(sec1, "utf8")).toStartWith("-----BEGIN EC PARAMETERS-----");
    expect(readPrivateKeyFile(sec1).publicKeyPem).toBe(openssl("pkey", "-in", sec1, "-pubout"));
    const bare = join(dir, "bare.key");
    openssl("ec", "-in", sec1, "-out", bare);
    expect(readFileSync(bare, "utf8")).toStartWith("-----BEGIN EC PRIVATE KEY-----");
    expect(readPrivateKeyFile(bare).algorithm).toBe(algorithm);
  });

  test("a compressed-point public key from openssl is the same key", () => {
    const dir = tempDir();
    const key = generateKey(algorithm);
    writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
    const compressed = openssl("ec", "-pubin", "-in", join(dir, "notary.pub"), "-conv_form", "compressed", "-pubout");
    expect(compressed).not.toBe(key.publicKeyPem);
    const decoded = decodePublicKeyPem(compressed);
    expect(samePublicKey(decoded, decodePublicKeyPem(key.publicKeyPem))).toBe(true);
    expect(encodePublicKeyPem(decoded)).toBe(key.publicKeyPem);
  });

  test("openssl verifies our proof signature as ECDSA-SHA256 over the canonical encoding", () => {
    const dir = tempDir();
    const key = generateKey(algorithm);
    const proof = signProof(sampleBody(key), key);
    const der = curveOf(algorithm).Signature.fromHex(proof.signature, "compact").toBytes("der");
    writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
    writeFileSync(join(dir, "message"), canonicalEncoding(proof.version, proof.body));
    writeFileSync(join(dir, "signature.der"), der);
    const output = openssl("dgst", "-sha256", "-verify", join(dir, "notary.pub"), "-signature", join(dir, "signature.der"), join(dir, "message"));
    expect(output.trim()).toBe("Verified OK");
  });
});

describe("samePublicKey", () => {
  test("distinguishes different keys and curves", () => {
    const a = decodePublicKeyPem(generateKey("secp256k1").publicKeyPem);
    const b = decodePublicKeyPem(generateKey("secp256k1").publicKeyPem);
    expect(samePublicKey(a, a)).toBe(true);
    expect(samePublicKey(a, b)).toBe(false);
    expect(samePublicKey(a, { ...a, algorithm: "secp256r1" })).toBe(false);
  });
});

describe("bad key input is a clear AppError, never a crash", () => {
  const pem = (label: string, der: Uint8Array | string) =>
    `-----BEGIN ${label}-----\n${Buffer.from(der).toString("base64")}\n-----END ${label}-----\n`;

  test.each([
    ["empty text", ""],
    ["plain text", "hello world"],
    ["a certificate label", pem("CERTIFICATE", "abc")],
    ["bad base64", "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n"],
  ])("private key: %s", (_, text) => {
    expectAppError(() => decodePrivateKeyPem(text), "config_invalid", /not a PEM private key/);
  });

  test("private key: DER garbage and truncation", () => {
    expectAppError(() => decodePrivateKeyPem(pem("PRIVATE KEY", "not der at all")), "config_invalid", /malformed/);
    const good = Buffer.from(encodePrivateKeyPem(generateKey("secp256k1")).split("\n").slice(1, -2).join(""), "base64");
    expectAppError(() => decodePrivateKeyPem(pem("PRIVATE KEY", good.subarray(0, good.length - 5))), "config_invalid", /malformed DER: truncated/);
  });

  test("every single-byte corruption of a key's DER either loads or fails with an AppError", () => {
    const good = Buffer.from(encodePrivateKeyPem(generateKey("secp256r1")).split("\n").slice(1, -2).join(""), "base64");
    let rejected = 0;
    for (let i = 0; i < good.length; i++) {
      const bad = Buffer.from(good);
      bad[i] = (bad[i] as number) ^ 0x41;
      try {
        decodePrivateKeyPem(pem("PRIVATE KEY", bad));
      } catch (error) {
        expect(error).toBeInstanceOf(AppError);
        rejected++;
      }
    }
    // Flipping a byte of the secret yields another valid key; everything structural or the embedded public key is caught.
    expect(rejected).toBeGreaterThan(good.length - 40);
  });

  test("a key whose embedded public key does not match its secret is refused", () => {
    const key = generateKey("secp256k1");
    const other = generateKey("secp256k1");
    const der = Buffer.from(encodePrivateKeyPem(key).split("\n").slice(1, -2).join(""), "base64");
    const otherPoint = Buffer.from(curveOf("secp256k1").getPublicKey(other.privateKey, false));
    const ownPoint = Buffer.from(curveOf("secp256k1").getPublicKey(key.privateKey, false));
    const spliced = Buffer.from(der);
    otherPoint.copy(spliced, der.indexOf(ownPoint));
    expectAppError(() => decodePrivateKeyPem(pem("PRIVATE KEY", spliced)), "config_invalid", /embedded public key does not match/);
  });

  test("other algorithms and curves are named", () => {
    const dir = tempDir();
    openssl("genpkey", "-algorithm", "ed25519", "-out", join(dir, "ed.key"));
    expectAppError(() => readPrivateKeyFile(join(dir, "ed.key")), "config_invalid", /ed\.key: not an EC key/);
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp384r1", "-out", join(dir, "p384.key"));
    expectAppError(() => readPrivateKeyFile(join(dir, "p384.key")), "config_invalid", /unsupported curve 1\.3\.132\.0\.34/);
    openssl("pkey", "-in", join(dir, "p384.key"), "-pubout", "-out", join(dir, "p384.pub"));
    expectAppError(() => readPublicKeyFile(join(dir, "p384.pub")), "config_invalid", /unsupported curve 1\.3\.132\.0\.34/);
  });

  test("encrypted private keys are named as such", () => {
    const dir = tempDir();
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1", "-aes256", "-pass", "pass:x", "-out", join(dir, "enc.key"));
    expectAppError(() => readPrivateKeyFile(join(dir, "enc.key")), "config_invalid", /encrypted private keys are not supported/);
  });

  test("public key: a private key PEM, and a point not on the curve", () => {
    const key = generateKey("secp256k1");
    expectAppError(() => decodePublicKeyPem(encodePrivateKeyPem(key)), "config_invalid", /not a PEM public key/);
    const der = Buffer.from(key.publicKeyPem.split("\n").slice(1, -2).join(""), "base64");
    der[der.length - 1] = (der[der.length - 1] as number) ^ 1;
    expectAppError(() => decodePublicKeyPem(pem("PUBLIC KEY", der)), "config_invalid", /not a valid secp256k1 public key point/);
  });

  test("missing files are file_unreadable, naming the path", () => {
    expectAppError(() => readPrivateKeyFile("/nonexistent/notary.key"), "file_unreadable", /\/nonexistent\/notary\.key/);
    expectAppError(() => readPublicKeyFile("/nonexistent/notary.pub"), "file_unreadable", /\/nonexistent\/notary\.pub/);
  });
});
