/**
 * What JSON.parse accepts silently but readers may disagree on, found in a proof's JSON text:
 * - duplicate object keys: JSON.parse keeps the last one and other parsers may keep the first, so a proof file
 *   with duplicates could show one reader a server name the signature never covered for another. Keys compare
 *   decoded (`"a"` and `"\u0061"` are the same key).
 * - numbers not in their one canonical form (`1795258e3`, `1.0`, `-0`, `…745.00000000001`, which rounds to
 *   another value): the signature covers the parsed number, so the file would show the reader text it did not.
 * Meant for text JSON.parse has accepted: on anything else the answer is meaningless but the scan ends.
 */

interface Frame {
  /** Keys seen so far; null for an array. */
  keys: Set<string> | null;
  /** Path of this container, as `body.redactions[0]`. */
  path: string;
  /** The current member's key, or the current item's index. */
  at: string | number;
  expectKey: boolean;
}

const childPath = (frame: Frame): string =>
  typeof frame.at === "number" ? `${frame.path}[${frame.at}]` : frame.path === "" ? frame.at : `${frame.path}.${frame.at}`;

const NUMBER = /-?[0-9][0-9.eE+-]*/y;

/**
 * Where the string whose content starts at `from` ends: its closing quote, or the end of the text. Searched for,
 * not walked: a proof's strings are most of its text (a megabyte of base64 for a megabyte of answer). `backslash` holds
 * the next backslash at or after some earlier position, so that each is looked for once in the whole text.
 */
function stringEnd(text: string, from: number, backslash: { at: number }): number {
  let end = from;
  for (;;) {
    const quote = text.indexOf('"', end);
    if (quote < 0) return text.length;
    if (backslash.at !== -1 && backslash.at < end) backslash.at = text.indexOf("\\", end);
    if (backslash.at === -1 || backslash.at > quote) return quote;
    // The backslash escapes the character after it, a quote included.
    end = backslash.at + 2;
  }
}

/** The first duplicate key or non-canonical number, as one reason naming where it is, or null. */
export function jsonTextProblem(text: string): string | null {
  const stack: Frame[] = [];
  const backslash = { at: text.indexOf("\\") };
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    const top = stack.at(-1);
    if (char === '"') {
      const end = stringEnd(text, i + 1, backslash);
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return `duplicate key ${JSON.stringify(key)} at ${top.path === "" ? "the top level" : top.path}`;
        top.keys.add(key);
        top.at = key;
        top.expectKey = false;
      }
      i = end;
    } else if (char === "-" || (char >= "0" && char <= "9")) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(text)?.[0] ?? char;
      // The one form JSON.stringify writes for the value the token parses to.
      if (String(Number(token)) !== token) return `non-canonical number ${token} at ${top ? childPath(top) : "the top level"}`;
      i += token.length - 1;
    } else if (char === "{" || char === "[") {
      const path = top ? childPath(top) : "";
      stack.push({ keys: char === "{" ? new Set() : null, path, at: 0, expectKey: char === "{" });
    } else if (char === "}" || char === "]") stack.pop();
    else if (char === "," && top) {
      if (top.keys) top.expectKey = true;
      else top.at = (top.at as number) + 1;
    }
  }
  return null;
}
