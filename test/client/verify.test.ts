import { expect, test } from "bun:test";
import { TlsproofError, verifyProof } from "../../src/client/index.ts";
import { withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { sampleBody, signedSample } from "../proof/fixtures.ts";
import { withEvmAttestationChanged, withTranscriptByteChanged } from "../../testkit/tamper.ts";

function failure(run: () => unknown): TlsproofError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TlsproofError);
    return error as TlsproofError;
  }
  throw new Error("expected a failure");
}

test("verifyProof: valid when one pinned key signed; another key, no key or a bad key are typed errors", () => {
  const { key, proof } = signedSample("secp256k1");
  const other = generateKey("secp256r1").publicKeyPem;
  expect(verifyProof(JSON.stringify(proof), [other, key.publicKeyPem]).body.requestId).toBe(proof.body.requestId);
  expect(verifyProof(proof, key.publicKeyPem).notaryFingerprint).toStartWith("sha256:");
  const wrongKey = failure(() => verifyProof(proof, [other]));
  expect(wrongKey.code).toBe("proof_invalid");
  expect(wrongKey.message).toContain("signed by a different notary key");
  expect(failure(() => verifyProof(proof, [])).code).toBe("config_invalid");
  expect(failure(() => verifyProof(proof, "not a key")).code).toBe("config_invalid");
  expect(failure(() => verifyProof('{"version":"tlsproof/1"}', key.publicKeyPem)).code).toBe("proof_invalid");
});

test("verifyProof: one transcript byte changed, or the EVM attestation changed, is proof_invalid", () => {
  const key = generateKey("secp256k1");
  const proofText = JSON.stringify(signProof(withEvmAttestation(sampleBody(key), key), key));
  expect(verifyProof(proofText, key.publicKeyPem).evm).not.toBeNull();
  for (const tampered of [withTranscriptByteChanged(proofText), withEvmAttestationChanged(proofText)]) {
    expect(tampered).not.toBe(proofText);
    const invalid = failure(() => verifyProof(tampered, key.publicKeyPem));
    expect(invalid.code).toBe("proof_invalid");
    expect(invalid.message).toContain("signature does not match");
  }
});
