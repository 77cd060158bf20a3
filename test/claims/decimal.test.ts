import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { compareDecimals } from "../../src/claims/decimal.ts";

describe("exact comparison of JSON numbers", () => {
  test("no rounding: beyond 2^53, and where floating point would round", () => {
    expect(compareDecimals("9007199254740993", "9007199254740992")).toBe(1);
    expect(compareDecimals("1000.0000000000000001", "1000")).toBe(1);
    expect(compareDecimals("0.30000000000000001", "0.3")).toBe(1);
    expect(compareDecimals("123456789012345678901234567890", "123456789012345678901234567891")).toBe(-1);
  });

  test("equal values written differently are equal; zero has no sign", () => {
    for (const [a, b] of [["1", "1.0"], ["1000", "1e3"], ["1000", "10E+2"], ["0.001", "1e-3"], ["0", "-0"], ["0", "0.000e5"], ["-12.50", "-1.25e1"]]) {
      expect(compareDecimals(a!, b!)).toBe(0);
    }
  });

  test("signs, magnitudes and huge exponents", () => {
    expect(compareDecimals("-1", "0")).toBe(-1);
    expect(compareDecimals("-2", "-1")).toBe(-1);
    expect(compareDecimals("-0.5", "-0.25")).toBe(-1);
    expect(compareDecimals("1e999999999999", "9e999999999998")).toBe(1);
    expect(compareDecimals("1e-999999999999", "0")).toBe(1);
    expect(compareDecimals("-1e-999999999999", "0")).toBe(-1);
  });

  test("agrees with BigInt on integers, and with scaled BigInts on decimals", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat(6), (a, b, places) => {
        const write = (n: bigint) => {
          if (places === 0) return n.toString();
          const digits = (n < 0n ? -n : n).toString().padStart(places + 1, "0");
          return `${n < 0n ? "-" : ""}${digits.slice(0, -places)}.${digits.slice(-places)}`;
        };
        expect(compareDecimals(write(a), write(b))).toBe(a === b ? 0 : a > b ? 1 : -1);
      }),
    );
  });

  test("a text that is not a JSON number is a TypeError", () => {
    for (const text of ["", "01", "1.", ".5", "+1", "1e", "NaN", "0x10"]) expect(() => compareDecimals(text, "1")).toThrow(TypeError);
  });
});

describe("exact comparison, edges", () => {
  test("zero against either sign, and digit strings of different lengths at one point", () => {
    expect([compareDecimals("0", "0.5"), compareDecimals("0.5", "0"), compareDecimals("0", "-0.5"), compareDecimals("-0.5", "0")]).toEqual([-1, 1, 1, -1]);
    expect([compareDecimals("12", "12.3"), compareDecimals("2", "1.23e0"), compareDecimals("1001", "1010"), compareDecimals("1.01", "1.1")]).toEqual([-1, 1, -1, -1]);
    expect([compareDecimals("100", "1e2"), compareDecimals("10", "1"), compareDecimals("1000", "999.9")]).toEqual([0, 1, 1]);
  });

  test("the refusal names the text, cut at 40 characters", () => {
    expect(() => compareDecimals(`x${"9".repeat(60)}`, "1")).toThrow(`not a JSON number: "x${"9".repeat(39)}"`);
  });
});
