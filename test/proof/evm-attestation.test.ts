import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { attestationDigest, checkEvmAttestation, evmAttestationOf, notaryEvmAddress, packRevealed, recoverAttestationSigner, withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import type { Proof, ProofBody } from "../../src/proof/format.ts";
import { decodePublicKeyPem, generateKey, type NotaryKey } from "../../src/proof/keys.ts";
import { renderVerifiedProof, verifiedProofJson } from "../../src/proof/render.ts";
import { signProof } from "../../src/proof/sign.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { runCommandModule, sampleBody, tempDir } from "./fixtures.ts";

/** What a notary makes: the EVM attestation added, then the tlsproof/1 signature over the whole body. */
const notarize = (body: ProofBody, key: NotaryKey): Proof => signProof(withEvmAttestation(body, key), key);

const key = generateKey("secp256k1");
const proof = notarize(sampleBody(key), key);

const invalidReason = (candidate: unknown, pinned = key.publicKeyPem): string => {
  try {
    verifyProof(candidate, pinned);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("the proof was accepted");
};

describe("EVM attestation in proofs", () => {
  test("a secp256k1 notary's proof carries one, and verification checks and reports it", () => {
    const address = notaryEvmAddress(key);
    expect(proof.body.evm?.address).toBe(address!);
    const verified = verifyProof(JSON.stringify(proof), key.publicKeyPem);
    expect(verified.evm).toEqual({
      address: address!,
      digest: `0x${bytesToHex(attestationDigest(evmAttestationOf(proof.body)))}`,
      signature: proof.body.evm!.signature,
    });
    expect(verifiedProofJson(verified).evm).toEqual(verified.evm);
    expect(renderVerifiedProof(verified)).toContain(`EVM attestation: valid, signed by ${address} (EIP-712 digest 0x`);
  });

  test("recoverAttestationSigner: the notary's address from its signature; nothing from a malformed one", () => {
    const attestation = evmAttestationOf(proof.body);
    expect(recoverAttestationSigner(attestation, proof.body.evm!.signature)).toBe(notaryEvmAddress(key)!);
    expect(recoverAttestationSigner(attestation, "0x1234")).toBeUndefined();
  });

  test("a secp256r1 notary makes none, and its proofs still verify, saying why there is none", () => {
    const p256 = generateKey("secp256r1");
    expect(notaryEvmAddress(p256)).toBeNull();
    const r1Proof = notarize(sampleBody(p256), p256);
    expect("evm" in r1Proof.body).toBe(false);
    const verified = verifyProof(r1Proof, p256.publicKeyPem);
    expect(verified.evm).toBeNull();
    expect(renderVerifiedProof(verified)).toContain("EVM attestation: none (a secp256r1 notary key cannot make one");
  });

  test("an older proof without one still verifies, and says it has none", () => {
    const older = signProof(sampleBody(key), key);
    expect(checkEvmAttestation(older.body, decodePublicKeyPem(key.publicKeyPem))).toEqual({ status: "absent" });
    const verified = verifyProof(older, key.publicKeyPem);
    expect(verified.evm).toBeNull();
    expect(renderVerifiedProof(verified)).toContain("EVM attestation: none (the notary made none");
  });

  test("taking the attestation out of a signed proof breaks the tlsproof/1 signature", () => {
    const { evm: _, ...stripped } = proof.body;
    expect(invalidReason({ ...proof, body: stripped })).toContain("signature does not match");
  });

  test("two signatures that disagree: an attestation of other data, re-signed under tlsproof/1, is invalid", () => {
    const other = withEvmAttestation({ ...sampleBody(key), serverName: "api.example.org" }, key);
    const mixed = signProof({ ...proof.body, evm: other.evm! }, key);
    expect(invalidReason(mixed)).toMatch(/body\.evm: the signature is not the notary's over this proof's data \(it recovers 0x[0-9a-f]{40}\)/);
  });

  test("an attestation by another key is invalid, whatever address it names", () => {
    const stranger = generateKey("secp256k1");
    const foreign = withEvmAttestation(sampleBody(key), stranger).evm!;
    expect(invalidReason(signProof({ ...proof.body, evm: foreign }, key))).toContain(`body.evm: address ${foreign.address} is not the notary key's address`);
    const relabelled = { ...foreign, address: proof.body.evm!.address };
    expect(invalidReason(signProof({ ...proof.body, evm: relabelled }, key))).toContain(`(it recovers ${foreign.address})`);
  });

  test("the high-s twin of the attestation's signature is refused", () => {
    const signature = proof.body.evm!.signature;
    const s = BigInt(`0x${signature.slice(66, 130)}`);
    const v = signature.slice(130) === "1b" ? "1c" : "1b";
    const twin = `${signature.slice(0, 66)}${(secp256k1.Point.CURVE().n - s).toString(16).padStart(64, "0")}${v}`;
    const tampered = signProof({ ...proof.body, evm: { ...proof.body.evm!, signature: twin } }, key);
    expect(invalidReason(tampered)).toContain("body.evm: the signature is malformed or has a high s");
  });

  test("a secp256r1 proof claiming an EVM attestation is invalid", () => {
    const p256 = generateKey("secp256r1");
    const claimed = signProof({ ...sampleBody(p256), evm: proof.body.evm! }, p256);
    expect(invalidReason(claimed, p256.publicKeyPem)).toContain("body.evm: a secp256r1 notary key makes no EVM attestation");
  });

  test("malformed attestation fields name the field", () => {
    const upper = { ...proof, body: { ...proof.body, evm: { ...proof.body.evm!, address: proof.body.evm!.address.toUpperCase() } } };
    expect(invalidReason(upper)).toContain("body.evm.address");
    const extra = { ...proof, body: { ...proof.body, evm: { ...proof.body.evm!, chainId: 1 } } };
    expect(invalidReason(extra)).toContain("body.evm");
    expect(invalidReason(signProof({ ...proof.body, requestId: "not-a-uuid" }, key))).toContain("body.evm: the request id is not a UUID");
  });

  test("cli verify: exit 0 reporting the attestation; exit 1 when the two signatures disagree", async () => {
    const dir = tempDir();
    const pubPath = join(dir, "notary.pub");
    writeFileSync(pubPath, key.publicKeyPem);
    writeFileSync(join(dir, "good.json"), JSON.stringify(proof));
    const good = await runCommandModule("src/cli/verify.ts", ["--notary-pub-key", pubPath, "--proof", join(dir, "good.json")]);
    expect(good.exitCode).toBe(0);
    expect(good.stdout).toContain(`EVM attestation: valid, signed by ${notaryEvmAddress(key)}`);

    const other = withEvmAttestation({ ...sampleBody(key), notarizedAt: proof.body.notarizedAt + 1 }, key);
    writeFileSync(join(dir, "mixed.json"), JSON.stringify(signProof({ ...proof.body, evm: other.evm! }, key)));
    const mixed = await runCommandModule("src/cli/verify.ts", ["--notary-pub-key", pubPath, "--proof", join(dir, "mixed.json")]);
    expect(mixed.exitCode).toBe(1);
    expect(mixed.stdout).toBe("");
    expect(mixed.stderr.trim()).toMatch(/^.*invalid proof: body\.evm: the signature is not the notary's over this proof's data/);
  });
});

describe("the attestation's revealed bytes", () => {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  test("each revealed range, sent then recv, as direction (1 byte) ‖ start ‖ length (4 bytes each, big-endian) ‖ its bytes", () => {
    const packed = packRevealed({
      sent: { length: 10, revealed: [{ start: 0, end: 3, data: b64("GET") }] },
      recv: {
        length: 300,
        revealed: [
          { start: 5, end: 7, data: b64("ok") },
          { start: 258, end: 261, data: b64("end") },
        ],
      },
    });
    expect(bytesToHex(packed)).toBe(
      ["00", "00000000", "00000003", bytesToHex(Buffer.from("GET")), "01", "00000005", "00000002", bytesToHex(Buffer.from("ok")), "01", "00000102", "00000003", bytesToHex(Buffer.from("end"))].join(""),
    );
  });

  test("nothing revealed packs to nothing", () => {
    expect(packRevealed({ sent: { length: 4, revealed: [] }, recv: { length: 9, revealed: [] } })).toEqual(new Uint8Array());
  });
});
