/** Proof signatures (src/proof/sign.ts): made only with the key the body names, checked on either curve, malformed text refused. */
import { describe, expect, test } from "bun:test";
import { PROOF_VERSION } from "../../src/proof/format.ts";
import { decodePublicKeyPem, generateKey } from "../../src/proof/keys.ts";
import { signProof, signatureMatches } from "../../src/proof/sign.ts";
import { sampleBody } from "./fixtures.ts";

describe("proof signatures", () => {
  test.each(["secp256k1", "secp256r1"] as const)("%s: a signature matches its body and key, and nothing else", (algorithm) => {
    const key = generateKey(algorithm);
    const proof = signProof(sampleBody(key), key);
    const publicKey = decodePublicKeyPem(key.publicKeyPem);
    expect(proof.signature).toMatch(/^[0-9a-f]{128}$/);
    expect(signatureMatches(PROOF_VERSION, proof.body, proof.signature, publicKey)).toBe(true);
    expect(signatureMatches(PROOF_VERSION, { ...proof.body, serverName: "api.example.org" }, proof.signature, publicKey)).toBe(false);
    expect(signatureMatches(PROOF_VERSION, proof.body, proof.signature, decodePublicKeyPem(generateKey(algorithm).publicKeyPem))).toBe(false);
  });

  test("a signature that is not 64 bytes of hex matches nothing, and throws nothing", () => {
    const key = generateKey("secp256k1");
    const proof = signProof(sampleBody(key), key);
    const publicKey = decodePublicKeyPem(key.publicKeyPem);
    for (const text of [proof.signature.slice(1), proof.signature.slice(2), `${proof.signature}00`, "zz".repeat(64)]) {
      expect(signatureMatches(PROOF_VERSION, proof.body, text, publicKey)).toBe(false);
    }
  });

  test("a body naming another key, or the key under another curve, is not signed", () => {
    const key = generateKey("secp256k1");
    const other = generateKey("secp256k1");
    expect(() => signProof({ ...sampleBody(key), notary: { publicKey: other.publicKeyPem, algorithm: "secp256k1" } }, key)).toThrow(
      "signProof: body.notary does not describe the signing key",
    );
    expect(() => signProof({ ...sampleBody(key), notary: { publicKey: key.publicKeyPem, algorithm: "secp256r1" } }, key)).toThrow(
      "signProof: body.notary does not describe the signing key",
    );
  });
});
