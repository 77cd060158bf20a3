/**
 * The two Keccak-256 adapters (src/core/keccak/): hash-wasm's WebAssembly (servers) and @noble/hashes (browser
 * bundles) give Ethereum's known digests and the same digest for any input: an EVM attestation a notary signed checks
 * in the viewer.
 */
import { describe, expect, test } from "bun:test";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { keccak256, keccak256Stream } from "../../../src/core/keccak/index.ts";
import { keccak as hashWasm } from "../../../src/core/keccak/hash-wasm.ts";
import { keccak as noble } from "../../../src/core/keccak/noble.ts";
import type { Keccak256 } from "../../../src/core/keccak/port.ts";

const adapters: [string, Keccak256][] = [["hash-wasm", hashWasm], ["noble", noble]];
/** Keccak-256's rate is 136 bytes: lengths around it and its multiples, and a megabyte. */
const LENGTHS = [0, 1, 135, 136, 137, 271, 272, 273, 1000, 65_536, 1_000_000];
const sample = (length: number) => new Uint8Array(length).map((_, i) => (i * 31 + length) & 0xff);

test("servers hash with hash-wasm", () => {
  expect(keccak256).toBe(hashWasm.hash);
  expect(keccak256Stream).toBe(hashWasm.stream);
});

describe.each(adapters)("Keccak-256 by %s", (_, keccak) => {
  test("Ethereum's known digests, not SHA3-256's", () => {
    const empty = "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470";
    expect(bytesToHex(keccak.hash())).toBe(empty);
    expect(bytesToHex(keccak.hash(""))).toBe(empty);
    expect(bytesToHex(keccak.hash(new Uint8Array()))).toBe(empty);
    expect(bytesToHex(keccak.hash("abc"))).toBe("4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45");
    // The ERC-20 transfer selector: the first 4 bytes of keccak256 of its signature.
    expect(bytesToHex(keccak.hash("transfer(address,uint256)").subarray(0, 4))).toBe("a9059cbb");
  });

  test("parts hash as their concatenation, text as its UTF-8 bytes, at every block boundary", () => {
    for (const length of LENGTHS) {
      const data = sample(length);
      const whole = keccak.hash(data);
      const cut = Math.floor(length / 3);
      expect(keccak.hash(data.subarray(0, cut), data.subarray(cut))).toEqual(whole);
      expect(keccak.stream().update(data.subarray(0, cut)).update(data.subarray(cut)).digest()).toEqual(whole);
    }
    const text = "Ünïcode ✓ \u{1F600} text";
    expect(keccak.hash("prefix:", text)).toEqual(keccak.hash(concatBytes(utf8ToBytes("prefix:"), utf8ToBytes(text))));
  });

  test("a digest is a copy: the next hash does not change it", () => {
    const first = keccak.hash("first");
    const saved = bytesToHex(first);
    keccak.hash("second");
    expect(bytesToHex(first)).toBe(saved);
  });

  test("streams keep their own state while other hashes run between their parts", () => {
    const a = keccak.stream().update("a-head:");
    const b = keccak.stream().update("b-head:");
    a.update("one");
    keccak.hash("in between");
    b.update(new Uint8Array([1, 2, 3]));
    a.update("two");
    expect(a.digest()).toEqual(keccak.hash("a-head:onetwo"));
    expect(b.digest()).toEqual(keccak.hash("b-head:", new Uint8Array([1, 2, 3])));
  });
});

test("the two adapters give the same digest of any input", () => {
  for (const length of LENGTHS) {
    const data = length <= 65_536 ? crypto.getRandomValues(new Uint8Array(length)) : sample(length);
    expect(bytesToHex(hashWasm.hash(data))).toBe(bytesToHex(noble.hash(data)));
  }
});
