import { expect, test } from "bun:test";
import { generateKey } from "../../src/proof/keys.ts";
import { eraOf, isCheckedBody, proofModeOf } from "../../src/proof/older-proofs.ts";
import { hiddenRequestBody, legacySampleBody, preClaimsSampleBody, sampleBody } from "./fixtures.ts";

const key = generateKey("secp256k1");

test("a body that names no mode is an MPC proof; one that names a mode is of that mode", () => {
  expect(proofModeOf(legacySampleBody(key))).toBe("mpc");
  expect(proofModeOf(hiddenRequestBody(key))).toBe("proxy");
  expect(proofModeOf({ mode: "mpc" })).toBe("mpc");
});

test("a body whose answer the notary checked says so by its request; an older one has none", () => {
  expect(isCheckedBody(sampleBody(key))).toBe(true);
  expect(isCheckedBody(hiddenRequestBody(key))).toBe(true);
  expect(isCheckedBody(legacySampleBody(key))).toBe(false);
});

test("each body's EIP-712 struct: the current one with claims, the one before claims, the one before the answer check", () => {
  expect(eraOf(sampleBody(key))).toBe("current");
  expect(eraOf(preClaimsSampleBody(key))).toBe("pre-claims");
  expect(eraOf(legacySampleBody(key))).toBe("legacy");
  // An empty list of claims is the current struct: claims stated none.
  expect(eraOf({ ...sampleBody(key), claims: [] })).toBe("current");
});
