/**
 * The bytes a notary signs: the canonical encoding of a proof body.
 *
 * canonicalEncoding(version, body) = UTF-8( version + "\n" + canonicalJson(body) ), where `version` is the proof's
 * (`tlsproof/1`): a body is signed and checked as one version, so a signature over one version's bytes never
 * passes for another's (versions.ts). canonicalJson is
 * JSON in the style of RFC 8785 (JCS), restricted to the values a proof body holds:
 * - objects: members sorted by key, comparing keys as sequences of UTF-16 code units (JavaScript's
 *   default string order); written `{"k":v,...}` with no whitespace; a member whose value is
 *   `undefined` is an error, not omitted;
 * - arrays: elements in order, `[a,b,...]`, no whitespace;
 * - strings: exactly as ECMAScript JSON.stringify writes them (`"` and `\` escaped, U+0000..U+001F
 *   as \b \t \n \f \r or \u00XX with lowercase hex, lone surrogates as \uDXXX, everything else
 *   as the character itself);
 * - numbers: integers in [-(2^53-1), 2^53-1] only, in decimal with no sign for zero, no exponent,
 *   no fraction (JSON.stringify of a safe integer); any other number is an error;
 * - true, false, null as themselves.
 * The signature is ECDSA (secp256k1 or P-256) over SHA-256 of these bytes.
 */
import type { ProofBody } from "./format.ts";

/** Domain separation: a signature over a proof body can never be replayed as another message, nor another version's. */
export const canonicalPrefix = (version: string): string => `${version}\n`;

/** Canonical JSON text of a JSON value; throws TypeError naming the path of anything not encodable. */
export function canonicalJson(value: unknown, path = "$"): string {
  // Pieces joined once at the end: joining at every level copied a proof's megabyte of base64 once per level.
  const pieces: string[] = [];
  writeCanonical(value, [path], pieces);
  return pieces.join("");
}

/** `$.a[0].b` from its steps: written only for an error, not for every value encoded. */
const pathText = (steps: readonly (string | number)[]): string => steps.map((step, i) => (i === 0 ? step : typeof step === "number" ? `[${step}]` : `.${step}`)).join("");

/** Writes `value`'s canonical text to `out`; `path` holds the steps to it, and is left as it was given. */
function writeCanonical(value: unknown, path: (string | number)[], out: string[]): void {
  if (value === null || typeof value === "boolean") out.push(String(value));
  else if (typeof value === "string") out.push(JSON.stringify(value));
  else if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new TypeError(`canonical JSON: ${pathText(path)} is not a safe integer: ${value}`);
    out.push(JSON.stringify(value));
  } else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (i > 0) out.push(",");
      path.push(i);
      writeCanonical(item, path, out);
      path.pop();
    });
    out.push("]");
  } else if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    out.push("{");
    Object.keys(value)
      .sort()
      .forEach((key, i) => {
        out.push(`${i > 0 ? "," : ""}${JSON.stringify(key)}:`);
        path.push(key);
        writeCanonical((value as Record<string, unknown>)[key], path, out);
        path.pop();
      });
    out.push("}");
  } else throw new TypeError(`canonical JSON: ${pathText(path)} cannot be encoded (${typeof value})`);
}

/** The bytes signed for `body` as a proof of `version`. */
export function canonicalEncoding(version: string, body: ProofBody): Uint8Array {
  return new TextEncoder().encode(canonicalPrefix(version) + canonicalJson(body));
}
