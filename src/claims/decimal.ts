/**
 * Exact comparison of two JSON number texts (RFC 8259), with no floating point: `0.1 + 0.2`-style rounding, or a
 * balance beyond 2^53, must never turn a false claim true. Each number is read as sign, significant digits and the
 * position of its decimal point; exponents are BigInts, so `1e999999999` compares as exactly as `1`.
 */
import { JSON_NUMBER } from "./grammar.ts";

interface Decimal {
  negative: boolean;
  /** Significant digits, no leading or trailing zeros ("" for zero): two equal values have equal digits. */
  digits: string;
  /** The value is 0.digits × 10^point (meaningless for zero). */
  point: bigint;
}

function readDecimal(text: string): Decimal {
  const parts = JSON_NUMBER.exec(text);
  if (!parts) throw new TypeError(`not a JSON number: ${JSON.stringify(text.slice(0, 40))}`);
  const [, integer = "", fraction = "", exponent = ""] = parts;
  const all = integer + fraction.slice(1);
  const leading = all.length - all.replace(/^0+/, "").length;
  const digits = all.slice(leading).replace(/0+$/, "");
  // BigInt("") is 0n: no exponent is exponent 0.
  const point = BigInt(integer.length - leading) + BigInt(exponent.slice(1));
  return { negative: text.startsWith("-") && digits !== "", digits, point };
}

/** The magnitudes' order: -1, 0 or 1. */
function compareMagnitude(a: Decimal, b: Decimal): number {
  if (a.digits === "" || b.digits === "") return Number(a.digits !== "") - Number(b.digits !== "");
  if (a.point !== b.point) return a.point > b.point ? 1 : -1;
  // Same point: digit strings with no trailing zeros compare as text ("12" < "123", "2" > "123").
  return a.digits === b.digits ? 0 : a.digits > b.digits ? 1 : -1;
}

/** -1, 0 or 1 as the number `a` is below, equal to or above `b`; throws TypeError for a text that is not a JSON number. */
export function compareDecimals(a: string, b: string): number {
  const [x, y] = [readDecimal(a), readDecimal(b)];
  if (x.negative !== y.negative) return x.negative ? -1 : 1;
  const magnitude = compareMagnitude(x, y);
  return x.negative && magnitude !== 0 ? -magnitude : magnitude;
}
