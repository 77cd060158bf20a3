/**
 * The secp256k1 adapters (src/core/secp256k1/): libsecp256k1's prebuilt addon and its wasm build (servers) and
 * @noble/curves (browser bundles) give the same signatures, accept each other's, and refuse the same things: a proof
 * signed by a notary verifies in the viewer, and a signature one would refuse is refused by all.
 */
import { describe, expect, test } from "bun:test";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { recoveryIdOf, type Secp256k1Ecdsa, undefinedOnThrow } from "../../../src/core/secp256k1/ecdsa.ts";
import { ecdsa as addon } from "../../../src/core/secp256k1/libsecp256k1-addon.ts";
import { ecdsa as wasm } from "../../../src/core/secp256k1/libsecp256k1-wasm.ts";
import { ecdsa as servers, LIBSECP256K1_BUILD } from "../../../src/core/secp256k1/libsecp256k1.ts";
import { ecdsa as noble } from "../../../src/core/secp256k1/noble.ts";

// The platforms the addon is prebuilt for load it (CI's among them): the tests below run all three there.
const addonPlatform = (process.platform === "linux" && process.arch === "x64") || (process.platform === "darwin" && process.arch === "arm64");
const adapters: [string, Secp256k1Ecdsa][] = [...(addon ? [["addon", addon] as [string, Secp256k1Ecdsa]] : []), ["wasm", wasm], ["noble", noble]];
const keys = Array.from({ length: 8 }, () => secp256k1.utils.randomSecretKey());
const digestOf = (text: string) => sha256(new TextEncoder().encode(text));
/** The curve's order: s and n − s are the two encodings of one signature. */
const N = secp256k1.Point.CURVE().n;

function highS(signature: Uint8Array): Uint8Array {
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).toString("hex")}`);
  const flipped = Buffer.from((N - s).toString(16).padStart(64, "0"), "hex");
  return Uint8Array.from([...signature.subarray(0, 32), ...flipped]);
}

describe("secp256k1 ECDSA, any adapter", () => {
  test("servers sign with the prebuilt addon where it is prebuilt, else with the wasm build", () => {
    expect(LIBSECP256K1_BUILD).toBe(addonPlatform ? "addon" : "wasm");
    expect(addon !== undefined).toBe(addonPlatform);
    expect(servers).toBe(addon ?? wasm);
  });

  test("the same deterministic low-s signature from each, each verifying the others'", () => {
    keys.forEach((key, i) => {
      const digest = digestOf(`message ${i}`);
      const publicKey = secp256k1.getPublicKey(key, false);
      const signatures = adapters.map(([, adapter]) => Buffer.from(adapter.sign(digest, key)).toString("hex"));
      expect(new Set(signatures).size).toBe(1);
      const signature = Buffer.from(signatures[0]!, "hex");
      for (const [, adapter] of adapters) {
        expect(adapter.verify(signature, digest, publicKey)).toBe(true);
        expect(adapter.verify(signature, digest, secp256k1.getPublicKey(key, true))).toBe(true);
      }
    });
  });

  test.each(adapters)("%s refuses another digest, another key, the high-s twin, and malformed input (false, never a throw)", (_, adapter) => {
    const [key, other] = [keys[0]!, keys[1]!];
    const digest = digestOf("signed");
    const signature = adapter.sign(digest, key);
    const publicKey = secp256k1.getPublicKey(key, false);
    expect(adapter.verify(signature, digestOf("not signed"), publicKey)).toBe(false);
    expect(adapter.verify(signature, digest, secp256k1.getPublicKey(other, false))).toBe(false);
    // Valid as math, refused as an encoding: a signature has one valid form.
    expect(secp256k1.verify(highS(signature), digest, publicKey, { prehash: false, lowS: false })).toBe(true);
    expect(adapter.verify(highS(signature), digest, publicKey)).toBe(false);
    expect(adapter.verify(signature.subarray(0, 63), digest, publicKey)).toBe(false);
    expect(adapter.verify(new Uint8Array(64), digest, publicKey)).toBe(false);
    expect(adapter.verify(signature, digest, publicKey.subarray(0, 64))).toBe(false);
  });

  test("recoverable signatures: the same from each; each recovers the signer, and nothing from a malformed one", () => {
    keys.forEach((key, i) => {
      const digest = digestOf(`attestation ${i}`);
      const publicKey = Buffer.from(secp256k1.getPublicKey(key, false)).toString("hex");
      const signed = adapters.map(([, adapter]) => adapter.signRecoverable(digest, key));
      expect(new Set(signed.map(({ signature, recovery }) => `${Buffer.from(signature).toString("hex")}/${recovery}`)).size).toBe(1);
      const fast = signed[0]!;
      for (const [, adapter] of adapters) {
        expect(Buffer.from(adapter.recover(fast.signature, fast.recovery, digest)!).toString("hex")).toBe(publicKey);
        // The other id recovers another key, or none.
        const flipped = adapter.recover(fast.signature, fast.recovery === 0 ? 1 : 0, digest);
        expect(flipped === undefined ? undefined : Buffer.from(flipped).toString("hex")).not.toBe(publicKey);
        expect(adapter.recover(new Uint8Array(64), 0, digest)).toBeUndefined();
        expect(adapter.recover(fast.signature.subarray(0, 40), 0, digest)).toBeUndefined();
      }
    });
  });

  test("the adapters' shared steps: a recovery id above 1 is refused, a library's throw reads as undefined", () => {
    expect(recoveryIdOf(0)).toBe(0);
    expect(recoveryIdOf(1)).toBe(1);
    expect(() => recoveryIdOf(2)).toThrow("secp256k1: a recovery id above 1");
    expect(undefinedOnThrow(() => 7)).toBe(7);
    expect(undefinedOnThrow(() => null)).toBeUndefined();
    expect(
      undefinedOnThrow(() => {
        throw new Error("malformed");
      }),
    ).toBeUndefined();
  });
});
