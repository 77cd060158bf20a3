import { expect, test } from "bun:test";
import { DER_TAG, derInteger, derReader } from "../../src/core/der.ts";
import { AppError } from "../../src/core/errors.ts";

/** derInteger writes a non-negative INTEGER as X.690 says: fewest bytes, two's complement, so a set high bit gets a leading 0x00. */

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

test("fewest bytes, a leading zero byte where the high bit would make the number negative", () => {
  const cases: [number, string][] = [
    [0, "020100"],
    [1, "020101"],
    [127, "02017f"],
    [128, "02020080"],
    [255, "020200ff"],
    [256, "02020100"],
    [32767, "02027fff"],
    [32768, "0203008000"],
    [65535, "020300ffff"],
    [65536, "0203010000"],
    [Number.MAX_SAFE_INTEGER, "02071fffffffffffff"],
  ];
  for (const [value, expected] of cases) expect([value, hex(derInteger(value))]).toEqual([value, expected]);
});

test("read back by the project's DER reader: one INTEGER TLV whose content is the number", () => {
  const reader = derReader("test", (reason) => new Error(reason));
  for (const value of [0, 127, 128, 255, 256, 1 << 20]) {
    const [item, end] = reader.tlv(derInteger(value), 0);
    expect(item.tag).toBe(DER_TAG.integer);
    expect(end).toBe(derInteger(value).length);
    expect(item.content.reduce((n, byte) => n * 256 + byte, 0)).toBe(value);
    expect(item.content[0]! & 0x80).toBe(0);
  }
});

test("a negative, fractional or unsafe number is a programming fault, not a wrong encoding", () => {
  for (const value of [-1, 1.5, Number.NaN, 2 ** 53]) {
    expect(() => derInteger(value)).toThrow(AppError);
  }
});
