import { expect, test } from "bun:test";
import { WireReader, hex16, uint16Bytes, vectorBytes } from "../../src/tls/wire.ts";
import { expectRefusal } from "./support/refusal.ts";

/** TLS wire structures: big-endian integers, length-prefixed vectors, and every read past the end refused. */

test("integers of one, two and three bytes, vectors, and what remains", () => {
  const r = new WireReader(Uint8Array.of(0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x02, 0xaa, 0xbb, 0x00, 0x01, 0xcc, 0x09), "a message");
  expect(r.remaining).toBe(13);
  expect(r.uint(1)).toBe(0x01);
  expect(r.uint(2)).toBe(0x0203);
  expect(r.uint(3)).toBe(0x040506);
  expect(r.vector(1)).toEqual(Uint8Array.of(0xaa, 0xbb));
  expect(r.vector(2)).toEqual(Uint8Array.of(0xcc));
  expect(r.remaining).toBe(1);
  expectRefusal(() => r.end(), "transcript_invalid", /^a message has 1 unexpected trailing bytes$/);
  expect(r.bytesOf(1)).toEqual(Uint8Array.of(0x09));
  expect(() => r.end()).not.toThrow();
  expect(r.bytesOf(0)).toEqual(new Uint8Array(0));
});

test("a read past the end is a truncated message, whatever was being read", () => {
  expectRefusal(() => new WireReader(Uint8Array.of(1), "ServerHello").uint(2), "transcript_invalid", /^ServerHello is truncated$/);
  expectRefusal(() => new WireReader(Uint8Array.of(3, 1, 2), "a vector").vector(1), "transcript_invalid", /^a vector is truncated$/);
  const exact = new WireReader(Uint8Array.of(2, 1, 2), "a vector");
  expect(exact.vector(1)).toEqual(Uint8Array.of(1, 2));
});

test("vectors as written: each length prefix width, parts joined, and a length that does not fit refused", () => {
  expect(vectorBytes(1, Uint8Array.of(1), Uint8Array.of(2, 3))).toEqual(Uint8Array.of(3, 1, 2, 3));
  expect(vectorBytes(2, new Uint8Array(0x0102))).toEqual(Uint8Array.of(1, 2, ...new Uint8Array(0x0102)));
  expect(vectorBytes(3, Uint8Array.of(9)).subarray(0, 4)).toEqual(Uint8Array.of(0, 0, 1, 9));
  expect(vectorBytes(3, new Uint8Array(0x010203)).subarray(0, 3)).toEqual(Uint8Array.of(1, 2, 3));
  expect(vectorBytes(1, new Uint8Array(255)).length).toBe(256);
  expectRefusal(() => vectorBytes(1, new Uint8Array(256)), "internal", /^a TLS vector of 256 bytes does not fit a 1-byte length$/);
  expectRefusal(() => vectorBytes(2, new Uint8Array(65536)), "internal", /does not fit a 2-byte length/);
  expect(uint16Bytes(0xabcd)).toEqual(Uint8Array.of(0xab, 0xcd));
  expect(hex16(0x1301)).toBe("0x1301");
  expect(hex16(0x2b)).toBe("0x002b");
});
