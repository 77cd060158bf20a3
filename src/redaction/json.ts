/**
 * A strict JSON parser (RFC 8259) over bytes that reports where every value and key is, so a value can be
 * hidden exactly: strings with their quotes, objects and arrays whole. Never throws: input that is not
 * exactly one JSON value (whitespace around allowed, and a leading UTF-8 byte-order mark) gives null.
 *
 * For a proof's transcript, where some bytes are hidden, `hidden` marks them: a run of hidden bytes where a
 * value or key belongs is a `hidden` node, and hidden bytes inside a string are taken as its content. The
 * structure then is what the visible bytes show.
 */
import type { ByteRange } from "../proof/format.ts";

export interface JsonMember {
  /** The key as decoded (escapes resolved), for comparison with a path segment; null when hidden. */
  key: string | null;
  /** The key's string token, quotes included. */
  keyRange: ByteRange;
  value: JsonNode;
}

export type JsonNode =
  | { kind: "object"; range: ByteRange; members: JsonMember[] }
  | { kind: "array"; range: ByteRange; items: JsonNode[] }
  | { kind: "string"; range: ByteRange }
  /** A number, true, false or null. */
  | { kind: "scalar"; range: ByteRange }
  /** Only with `hidden`: a run of hidden bytes standing where a value or a key is. */
  | { kind: "hidden"; range: ByteRange };

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

const BOM = [0xef, 0xbb, 0xbf];

export function parseJson(bytes: Uint8Array, hidden: (pos: number) => boolean = () => false): JsonNode | null {
  let pos = BOM.every((b, i) => bytes[i] === b) ? BOM.length : 0;
  const hiddenRun = (): ByteRange => {
    const start = pos;
    while (pos < bytes.length && hidden(pos)) pos++;
    return { start, end: pos };
  };

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

  /** Reads a string token at `pos`; returns its decoded text when `decode` (null if partly hidden), else "". */
  const readString = (decode: boolean): string | null => {
    pos++; // opening quote
    let text = "";
    let runStart = pos;
    let partlyHidden = false;
    for (;;) {
      const b = bytes[pos];
      if (b !== undefined && hidden(pos)) {
        partlyHidden = true;
        pos++;
        continue;
      }
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
    return partlyHidden ? null : text;
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
    if (b !== undefined && hidden(pos)) return { kind: "hidden", range: hiddenRun() };
    if (b === 0x7b) return readObject(start, depth);
    if (b === 0x5b) return readArray(start, depth);
    if (b === QUOTE) {
      readString(false);
      return { kind: "string", range: { start, end: pos } };
    }
    const literal = b === undefined ? undefined : literals[b];
    if (literal) expectLiteral(literal);
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
      const keyStart = pos;
      let key: string | null = null;
      if (pos < bytes.length && hidden(pos)) hiddenRun();
      else if (bytes[pos] === QUOTE) key = readString(true);
      else fail();
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
 * The values at a path: a segment names an object key, or an array index when the value there is an
 * array. Every member with a duplicated key is followed (parsers disagree on which one wins, so all are
 * hidden).
 */
export function valuesAtPath(root: JsonNode, path: readonly string[]): JsonNode[] {
  let current: JsonNode[] = [root];
  for (const segment of path) {
    const next: JsonNode[] = [];
    for (const node of current) {
      if (node.kind === "object") {
        for (const member of node.members) {
          if (member.key === segment) next.push(member.value);
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

/** Every string token of the tree, keys included, in no particular order. */
export function stringTokens(root: JsonNode): ByteRange[] {
  const found: ByteRange[] = [];
  const walk = (node: JsonNode) => {
    if (node.kind === "string") found.push(node.range);
    else if (node.kind === "array") node.items.forEach(walk);
    else if (node.kind === "object") {
      for (const member of node.members) {
        if (member.key !== null) found.push(member.keyRange);
        walk(member.value);
      }
    }
  };
  walk(root);
  return found;
}

/** A string's content as UTF-8 with, for each of its bytes, the token bytes it was written with. */
export interface DecodedString {
  bytes: Uint8Array;
  /** sources[i]: the bytes of the token that byte i of `bytes` comes from (a whole escape for an escaped character). */
  sources: ByteRange[];
}

const encoder = new TextEncoder();
const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** Decodes the string token at `token` (quotes included) of a parsed JSON text. */
export function decodeString(bytes: Uint8Array, token: ByteRange): DecodedString {
  const out: number[] = [];
  const sources: ByteRange[] = [];
  const emit = (encoded: Uint8Array | number[], source: ByteRange) => {
    for (const b of encoded) {
      out.push(b);
      sources.push(source);
    }
  };
  const unitAt = (at: number) => (bytes[at] === BACKSLASH && bytes[at + 1] === 0x75 ? Number.parseInt(utf8.decode(bytes.subarray(at + 2, at + 6)), 16) : -1);
  for (let pos = token.start + 1; pos < token.end - 1; ) {
    if (bytes[pos] !== BACKSLASH) {
      emit([bytes[pos]!], { start: pos, end: pos + 1 });
      pos++;
      continue;
    }
    const unit = unitAt(pos);
    if (unit < 0) {
      emit(encoder.encode(simpleEscapes[bytes[pos + 1]!] ?? ""), { start: pos, end: pos + 2 });
      pos += 2;
      continue;
    }
    const low = unitAt(pos + 6);
    if (isHighSurrogate(unit) && isLowSurrogate(low)) {
      emit(encoder.encode(String.fromCharCode(unit, low)), { start: pos, end: pos + 12 });
      pos += 12;
    } else {
      // A lone surrogate has no UTF-8 form; it becomes U+FFFD, as TextEncoder writes it.
      emit(encoder.encode(String.fromCharCode(unit)), { start: pos, end: pos + 6 });
      pos += 6;
    }
  }
  return { bytes: Uint8Array.from(out), sources };
}
