import { describe, expect, test } from "bun:test";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { addressOfPublicKey, addressOfSecretKey, personalMessageHash, recoverPersonalMessageSigner, signPersonalMessage } from "../../src/core/eth-signature.ts";

// The web3.js documentation's example account and its `accounts.sign("Some data", key)` result.
const KEY = hexToBytes("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318");
const ADDRESS = "0x2c7536e3605d9c16a7a3d7b1898e529396a65c23";
const SIGNATURE =
  "0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c";

describe("EIP-191 personal messages", () => {
  test("matches a published Ethereum vector: hash, address, signature", () => {
    expect(bytesToHex(personalMessageHash("Some data"))).toBe("1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655");
    expect(addressOfSecretKey(KEY)).toBe(ADDRESS);
    expect(signPersonalMessage("Some data", KEY)).toBe(SIGNATURE);
    expect(recoverPersonalMessageSigner("Some data", SIGNATURE)).toBe(ADDRESS);
  });

  test("a changed message or signature recovers someone else or nothing", () => {
    expect(recoverPersonalMessageSigner("Some datA", SIGNATURE)).not.toBe(ADDRESS);
    const flipped = `${SIGNATURE.slice(0, 10)}${SIGNATURE[10] === "0" ? "1" : "0"}${SIGNATURE.slice(11)}`;
    expect(recoverPersonalMessageSigner("Some data", flipped)).not.toBe(ADDRESS);
    expect(recoverPersonalMessageSigner("Some data", `${SIGNATURE.slice(0, -2)}1d`)).toBeUndefined();
    expect(recoverPersonalMessageSigner("Some data", "0x1234")).toBeUndefined();
    expect(recoverPersonalMessageSigner("Some data", "not hex at all")).toBeUndefined();
  });

  test("the signature's hex is read whole: nothing before its 0x, nothing after its 130 digits", () => {
    expect(recoverPersonalMessageSigner("Some data", `x${SIGNATURE}`)).toBeUndefined();
    expect(recoverPersonalMessageSigner("Some data", `${SIGNATURE}00`)).toBeUndefined();
  });

  test("a message given as bytes is hashed as those bytes, UTF-8 or not", () => {
    expect(bytesToHex(personalMessageHash(new TextEncoder().encode("Some data")))).toBe("1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655");
    const raw = Uint8Array.of(0xff, 0x00, 0x80);
    const prefix = new TextEncoder().encode("\x19Ethereum Signed Message:\n3");
    expect(bytesToHex(personalMessageHash(raw))).toBe(bytesToHex(keccak_256(Uint8Array.from([...prefix, ...raw]))));
  });

  test("an address is the same from the key's compressed and uncompressed forms", () => {
    expect(addressOfPublicKey(secp256k1.getPublicKey(KEY, false))).toBe(ADDRESS);
    expect(addressOfPublicKey(secp256k1.getPublicKey(KEY, true))).toBe(ADDRESS);
  });

  test("accepts v as 0/1 as well as 27/28", () => {
    const v = Number.parseInt(SIGNATURE.slice(-2), 16) - 27;
    expect(recoverPersonalMessageSigner("Some data", `${SIGNATURE.slice(0, -2)}0${v}`)).toBe(ADDRESS);
  });
});
