import { describe, expect, test } from "bun:test";
import { base64ToBytes, bytesToBase64, concatBytes, portableBase64, sameBytes } from "../../src/base/bytes.ts";

/** Bytes of every length up to 70, every byte value, and a run past one slice of the portable encoder (32 KiB). */
const samples = [
  ...Array.from({ length: 70 }, (_, n) => Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff)),
  Uint8Array.from({ length: 256 }, (_, i) => i),
  crypto.getRandomValues(new Uint8Array(0x8000 * 2 + 5)),
];

describe("base64, native and portable", () => {
  test("both encode every sample alike, as Buffer does, and decode it back", () => {
    for (const bytes of samples) {
      const text = Buffer.from(bytes).toString("base64");
      expect(bytesToBase64(bytes)).toBe(text);
      expect(portableBase64.fromBytes(bytes)).toBe(text);
      expect(base64ToBytes(text)).toEqual(bytes);
      expect(portableBase64.toBytes(text)).toEqual(bytes);
    }
  });

  test("both refuse what is not base64, and take the whitespace and missing padding atob takes", () => {
    for (const text of ["a", "abcde", "ab=c", "a*bc", "ab\u00e9c", "abc=="]) {
      expect(base64ToBytes(text)).toBeNull();
      expect(portableBase64.toBytes(text)).toBeNull();
    }
    for (const [text, bytes] of [["YWJj", "abc"], ["YW Jj\n", "abc"], ["YWI", "ab"], ["YQ", "a"], ["", ""]] as const) {
      const expected = new TextEncoder().encode(bytes);
      expect(base64ToBytes(text)).toEqual(expected);
      expect(portableBase64.toBytes(text)).toEqual(expected);
    }
  });
});

describe("bytes compared and joined", () => {
  test("sameBytes: equal bytes of one length only; a prefix is not the same", () => {
    expect(sameBytes(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 3))).toBe(true);
    expect(sameBytes(new Uint8Array(0), new Uint8Array(0))).toBe(true);
    expect(sameBytes(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 3))).toBe(false);
    expect(sameBytes(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2))).toBe(false);
    expect(sameBytes(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 9, 3))).toBe(false);
  });

  test("concatBytes: the chunks in order, their total counted or given", () => {
    const chunks = [Uint8Array.of(1, 2), new Uint8Array(0), Uint8Array.of(3), Uint8Array.of(4, 5, 6)];
    expect(concatBytes(chunks)).toEqual(Uint8Array.of(1, 2, 3, 4, 5, 6));
    expect(concatBytes(chunks, 6)).toEqual(Uint8Array.of(1, 2, 3, 4, 5, 6));
    expect(concatBytes([])).toEqual(new Uint8Array(0));
  });
});
