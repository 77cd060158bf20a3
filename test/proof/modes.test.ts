import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { attestationTypeName, withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import { BUILT_IN_MODES, type ModeFacts, knowModeFacts, knownModes, modeFacts, registerModeFacts } from "../../src/proof/modes.ts";
import { renderVerifiedProof, verifiedProofJson } from "../../src/proof/render.ts";
import { signProof } from "../../src/proof/sign.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { sampleBody, signedSample } from "./fixtures.ts";

const { key } = signedSample();
/** A mode no build has: a notary in a trusted enclave that fetched the answer itself. */
const TEE: ModeFacts = { name: "tee-test", summary: "the notary fetched the answer itself, in an enclave", notaryDials: true, mayHideRequest: false, notarySeesAnswer: false, evmType: "TeeTestAttestation" };
/** A proof of that mode, signed by a notary that knows it (its EVM attestation's type is the mode's). */
function teeProof() {
  const forget = registerModeFacts(TEE);
  try {
    return signProof(withEvmAttestation({ ...sampleBody(key), mode: TEE.name, serverPort: 443 }, key), key);
  } finally {
    forget();
  }
}

function invalidReason(input: unknown): string {
  try {
    verifyProof(input, key.publicKeyPem);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("proof_invalid");
    return (error as AppError).message;
  }
  throw new Error("expected the proof to be refused");
}

describe("the modes a verifier knows", () => {
  test("the built-in modes always, each with its facts", () => {
    expect(knownModes()).toEqual(["mpc", "proxy"]);
    expect(modeFacts("mpc")).toBe(BUILT_IN_MODES.mpc);
    expect(modeFacts("proxy")?.notaryDials).toBe(true);
    expect(modeFacts("tee-test")).toBeUndefined();
  });

  test("a well-signed proof of a mode the verifier does not know is refused, naming the modes it knows", () => {
    expect(invalidReason(teeProof())).toBe('invalid proof: body.mode: unknown proof mode "tee-test" (this verifier knows mpc, proxy)');
  });

  test("once its facts are registered, the same proof verifies and reports its mode; forgotten, it is refused again", () => {
    const proof = teeProof();
    const forget = registerModeFacts(TEE);
    try {
      const verified = verifyProof(proof, key.publicKeyPem, { mode: TEE.name });
      expect(verifiedProofJson(verified)).toMatchObject({ mode: TEE.name, serverPort: 443, request: "revealed" });
      expect(renderVerifiedProof(verified)).toContain(`Proof mode:   tee-test (${TEE.summary})`);
      // Its EVM attestation is signed under the mode's own type: a contract accepts a mode by asking for that type.
      expect(verified.evm).not.toBeNull();
      expect(attestationTypeName(TEE.name)).toBe("TeeTestAttestation");
      // Its facts are the verifier's rules: a notary that never dials names no port.
      const noPort = signProof({ ...sampleBody(key), mode: TEE.name }, key);
      expect(invalidReason(noPort)).toBe("invalid proof: body.serverPort: a proof of tee-test mode names the port its notary dialled");
    } finally {
      forget();
    }
    expect(invalidReason(proof)).toContain('unknown proof mode "tee-test"');
  });

  test("a built-in mode's name, another mode's name or a malformed one cannot be registered", () => {
    expect(() => registerModeFacts({ ...TEE, name: "proxy" })).toThrow("the mode proxy is known already");
    expect(() => registerModeFacts({ ...TEE, name: "Tee" })).toThrow("lower-case letters");
    const forget = registerModeFacts(TEE);
    try {
      expect(() => registerModeFacts({ ...TEE })).toThrow("the mode tee-test is known already");
    } finally {
      forget();
    }
  });

  test("a server's further modes are known while it runs: those not known yet, forgotten again; a clash is refused", () => {
    const forgetRegistered = registerModeFacts(TEE);
    const other: ModeFacts = { ...TEE, name: "tee-other" };
    try {
      const forget = knowModeFacts([TEE, other]);
      expect(knownModes()).toEqual(["mpc", "proxy", "tee-test", "tee-other"]);
      forget();
      // Known before the server made it known: still known once it stops.
      expect(knownModes()).toEqual(["mpc", "proxy", "tee-test"]);
      expect(() => knowModeFacts([{ ...TEE }])).toThrow("the mode tee-test is known already");
      expect(() => knowModeFacts([{ ...TEE, name: "mpc" }])).toThrow("the mode mpc is known already");
    } finally {
      forgetRegistered();
    }
    expect(knownModes()).toEqual(["mpc", "proxy"]);
  });

  test("a mode's name in a proof is a name, not any text", () => {
    const proof = signProof({ ...sampleBody(key), mode: "MPC; drop" }, key);
    expect(invalidReason(proof)).toBe(`invalid proof: body.mode: expected a mode's name (lower-case letters, digits and dashes), got "MPC; drop"`);
  });
});
