/**
 * A strict JSON parser (RFC 8259) over bytes that reports where every value and key is, so a value can be
 * hidden exactly: strings with their quotes, objects and arrays whole. Never throws: input that is not
 * exactly one JSON value (whitespace around allowed) gives null.
 */
import type { ByteRange } from "../proof/format.ts";

export interface JsonMember {
  /** The key as decoded (escapes resolved), for comparison with a path segment. */
  key: string;
  /** The key's string token, quotes included. */
  keyRange: ByteRange;
  value: JsonNode;
}

export type JsonNode =
  | { kind: "object"; range: ByteRange; members: JsonMember[] }
  | { kind: "array"; range: ByteRange; items: JsonNode[] }
  | { kind: "scalar"; range: ByteRange };

/** Deeper nesting is treated as not JSON rather than risking the call stack. */
const MAX_DEPTH = 512;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const simpleEscapes: Record<number, string> = {
  0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t",
};
const utf8 = new TextDecoder();
const literals: Record<number, Uint8Array> = {
  0x74: new TextEncoder().encode("true"),
  0x66: new TextEncoder().encode("false"),
  0x6e: new TextEncoder().encode("null"),
};

class NotJson extends Error {}

export function parseJson(bytes: Uint8Array): JsonNode | null {
  let pos = 0;

  const fail = (): never => {
    throw new NotJson();
  };
  const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
  const isHex = (b: number | undefined) =>
    b !== undefined && (isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));

  const skipWhitespace = () => {
    for (let b = bytes[pos]; b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d; b = bytes[++pos]);
  };
  const expectLiteral = (word: Uint8Array) => {
    for (const b of word) if (bytes[pos++] !== b) fail();
  };
  const digits = () => {
    if (!isDigit(bytes[pos])) fail();
    while (isDigit(bytes[pos])) pos++;
  };

  /** Reads a string token at `pos`; returns its decoded text when `decode`, else "". */
  const readString = (decode: boolean): string => {
    pos++; // opening quote
    let text = "";
    let runStart = pos;
    for (;;) {
      const b = bytes[pos];
      if (b === undefined || b < 0x20) fail();
      if (b === QUOTE) break;
      if (b !== BACKSLASH) {
        pos++;
        continue;
      }
      if (decode) text += utf8.decode(bytes.subarray(runStart, pos));
      const escape = bytes[pos + 1];
      if (escape === 0x75) {
        for (let i = 2; i < 6; i++) if (!isHex(bytes[pos + i])) fail();
        // Lone surrogates stay as code units; a pair written as two escapes joins in the JS string.
        if (decode) text += String.fromCharCode(Number.parseInt(utf8.decode(bytes.subarray(pos + 2, pos + 6)), 16));
        pos += 6;
      } else {
        const char = escape === undefined ? undefined : simpleEscapes[escape];
        if (char === undefined) fail();
        if (decode) text += char;
        pos += 2;
      }
      runStart = pos;
    }
    if (decode) text += utf8.decode(bytes.subarray(runStart, pos));
    pos++; // closing quote
    return text;
  };

  const readNumber = () => {
    if (bytes[pos] === 0x2d) pos++;
    if (bytes[pos] === 0x30) pos++;
    else digits();
    if (bytes[pos] === 0x2e) {
      pos++;
      digits();
    }
    if (bytes[pos] === 0x65 || bytes[pos] === 0x45) {
      pos++;
      if (bytes[pos] === 0x2b || bytes[pos] === 0x2d) pos++;
      digits();
    }
  };

  const readValue = (depth: number): JsonNode => {
    if (depth > MAX_DEPTH) fail();
    skipWhitespace();
    const start = pos;
    const b = bytes[pos];
    if (b === 0x7b) return readObject(start, depth);
    if (b === 0x5b) return readArray(start, depth);
    const literal = b === undefined ? undefined : literals[b];
    if (b === QUOTE) readString(false);
    else if (literal) expectLiteral(literal);
    else if (b === 0x2d || isDigit(b)) readNumber();
    else fail();
    return { kind: "scalar", range: { start, end: pos } };
  };

  const readObject = (start: number, depth: number): JsonNode => {
    pos++;
    const members: JsonMember[] = [];
    skipWhitespace();
    if (bytes[pos] === 0x7d) {
      pos++;
      return { kind: "object", range: { start, end: pos }, members };
    }
    for (;;) {
      skipWhitespace();
      if (bytes[pos] !== QUOTE) fail();
      const keyStart = pos;
      const key = readString(true);
      const keyRange = { start: keyStart, end: pos };
      skipWhitespace();
      if (bytes[pos++] !== 0x3a) fail();
      members.push({ key, keyRange, value: readValue(depth + 1) });
      skipWhitespace();
      const next = bytes[pos++];
      if (next === 0x7d) return { kind: "object", range: { start, end: pos }, members };
      if (next !== 0x2c) fail();
    }
  };

  const readArray = (start: number, depth: number): JsonNode => {
    pos++;
    const items: JsonNode[] = [];
    skipWhitespace();
    if (bytes[pos] === 0x5d) {
      pos++;
      return { kind: "array", range: { start, end: pos }, items };
    }
    for (;;) {
      items.push(readValue(depth + 1));
      skipWhitespace();
      const next = bytes[pos++];
      if (next === 0x5d) return { kind: "array", range: { start, end: pos }, items };
      if (next !== 0x2c) fail();
    }
  };

  try {
    const root = readValue(0);
    skipWhitespace();
    return pos === bytes.length ? root : null;
  } catch (error) {
    if (error instanceof NotJson) return null;
    throw error;
  }
}

const arrayIndex = /^(0|[1-9][0-9]*)$/;

/**
 * The values at a dotted path: a segment names an object key, or an array index when the value there is an
 * array. Every member with a duplicated key is followed (parsers disagree on which one wins, so all are
 * hidden). `keyUsable` decides whether a key token may be matched at all (the caller's visibility rule).
 */
export function valuesAtPath(root: JsonNode, path: readonly string[], keyUsable: (key: ByteRange) => boolean): JsonNode[] {
  let current: JsonNode[] = [root];
  for (const segment of path) {
    const next: JsonNode[] = [];
    for (const node of current) {
      if (node.kind === "object") {
        for (const member of node.members) {
          if (member.key === segment && keyUsable(member.keyRange)) next.push(member.value);
        }
      } else if (node.kind === "array" && arrayIndex.test(segment)) {
        const item = node.items[Number(segment)];
        if (item) next.push(item);
      }
    }
    current = next;
  }
  return current;
}
