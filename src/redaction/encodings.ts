/**
 * The spellings a hidden value may be echoed in, as byte strings to look for: the value, its percent-decoded
 * form, a form body's `+` for each space, and, for a value with characters JSON escapes, the escaped forms
 * serializers write (`\"`, `\\`, control characters; `\/` as some write it; `\uXXXX` for non-ASCII as others
 * do). Percent-encoded echoes need no needle of their own: they are decoded where they stand (percent.ts).
 */
import { percentDecoded } from "./percent.ts";

const SPACE = 0x20;
const PLUS = 0x2b;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const utf8 = new TextEncoder();

function utf8Text(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/** The JSON string contents a serializer may write for `value` (without quotes), when any differs from it. */
function jsonEscaped(value: Uint8Array): Uint8Array[] {
  const text = utf8Text(value);
  if (text === null) return [];
  const escaped = JSON.stringify(text).slice(1, -1);
  const forms = [escaped, escaped.replaceAll("/", "\\/"), escaped.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)];
  return forms.filter((form) => form !== text).map((form) => utf8.encode(form));
}

/** `value` and the other spellings of it to look for (duplicates possible; the caller drops them). */
export function echoSpellings(value: Uint8Array): Uint8Array[] {
  const decoded = percentDecoded(value);
  const bases = decoded ? [value, decoded] : [value];
  return bases.flatMap((base) => {
    const plus = base.includes(SPACE) ? [base.map((b) => (b === SPACE ? PLUS : b))] : [];
    return [base, ...plus, ...jsonEscaped(base)];
  });
}
