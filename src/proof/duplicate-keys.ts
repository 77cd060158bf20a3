/**
 * Duplicate object keys in a JSON text. JSON.parse keeps the last one silently and other parsers may keep
 * the first, so a proof file with duplicates could show one reader a server name the signature never
 * covered for another. Keys compare decoded (`"a"` and `"\u0061"` are the same key).
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

/** The first duplicate key and the path of the object holding it, or null. */
export function duplicateKey(text: string): { key: string; path: string } | null {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    const top = stack.at(-1);
    if (char === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return { key, path: top.path === "" ? "the top level" : top.path };
        top.keys.add(key);
        top.at = key;
        top.expectKey = false;
      }
      i = end;
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
