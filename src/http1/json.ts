/**
 * A strict JSON parser (RFC 8259) over bytes that reports where every value and key is, so a value can be
 * hidden exactly: strings with their quotes, objects and arrays whole. Never throws: input that is not
 * exactly one JSON value (whitespace around allowed, and a leading UTF-8 byte-order mark) gives null.
 *
 * For a proof's transcript, where some bytes are hidden, `hidden` marks them: a run of hidden bytes where a
 * value or key belongs is a `hidden` node, and hidden bytes inside a string are taken as its content. The
 * structure then is what the visible bytes show.
 */
import type { ByteRange } from "../core/transcript.ts";

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

/**
 * Thrown to leave the parse at the first byte that is not JSON, and caught in parseJson. One object thrown each time,
 * not an Error: most bodies and values tried are not JSON, and an Error's stack trace costs more than their parse.
 */
const NOT_JSON: unique symbol = Symbol("not JSON");

const BOM = [0xef, 0xbb, 0xbf];

const fail = (): never => {
  throw NOT_JSON;
};
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
const isHex = (b: number | undefined) => b !== undefined && (isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));

export function parseJson(bytes: Uint8Array, hidden: (pos: number) => boolean = () => false): JsonNode | null {
  const reader = new JsonReader(bytes, hidden);
  try {
    const root = reader.readValue(0);
    reader.skipWhitespace();
    return reader.atEnd() ? root : null;
  } catch (error) {
    if (error === NOT_JSON) return null;
    throw error;
  }
}

/** One pass over the bytes: `pos` moves forward token by token; any deviation from RFC 8259 throws NOT_JSON. */
class JsonReader {
  private pos: number;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly hidden: (pos: number) => boolean,
  ) {
    this.pos = BOM.every((b, i) => bytes[i] === b) ? BOM.length : 0;
  }

  atEnd(): boolean {
    return this.pos === this.bytes.length;
  }

  skipWhitespace(): void {
    for (let b = this.bytes[this.pos]; b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d; b = this.bytes[++this.pos]);
  }

  readValue(depth: number): JsonNode {
    if (depth > MAX_DEPTH) fail();
    this.skipWhitespace();
    const start = this.pos;
    const b = this.bytes[this.pos];
    if (this.hiddenAt(this.pos)) return { kind: "hidden", range: this.hiddenRun() };
    if (b === 0x7b) return this.readObject(start, depth);
    if (b === 0x5b) return this.readArray(start, depth);
    if (b === QUOTE) {
      this.readString(false);
      return { kind: "string", range: { start, end: this.pos } };
    }
    const literal = b === undefined ? undefined : literals[b];
    if (literal) this.expectLiteral(literal);
    else if (b === 0x2d || isDigit(b)) this.readNumber();
    else fail();
    return { kind: "scalar", range: { start, end: this.pos } };
  }

  private hiddenAt(at: number): boolean {
    return at < this.bytes.length && this.hidden(at);
  }

  private hiddenRun(): ByteRange {
    const start = this.pos;
    while (this.hiddenAt(this.pos)) this.pos++;
    return { start, end: this.pos };
  }

  private expectLiteral(word: Uint8Array): void {
    for (const b of word) if (this.bytes[this.pos++] !== b) fail();
  }

  private digits(): void {
    if (!isDigit(this.bytes[this.pos])) fail();
    while (isDigit(this.bytes[this.pos])) this.pos++;
  }

  private readNumber(): void {
    const { bytes } = this;
    if (bytes[this.pos] === 0x2d) this.pos++;
    if (bytes[this.pos] === 0x30) this.pos++;
    else this.digits();
    if (bytes[this.pos] === 0x2e) {
      this.pos++;
      this.digits();
    }
    if (bytes[this.pos] === 0x65 || bytes[this.pos] === 0x45) {
      this.pos++;
      if (bytes[this.pos] === 0x2b || bytes[this.pos] === 0x2d) this.pos++;
      this.digits();
    }
  }

  /** Reads a string token at `pos`; returns its decoded text when `decode` (null if partly hidden), else "". */
  private readString(decode: boolean): string | null {
    const { bytes } = this;
    this.pos++; // opening quote
    let text = "";
    let runStart = this.pos;
    let partlyHidden = false;
    for (;;) {
      const b = bytes[this.pos];
      if (this.hiddenAt(this.pos)) {
        partlyHidden = true;
        this.pos++;
        continue;
      }
      if (b === undefined || b < 0x20) fail();
      if (b === QUOTE) break;
      if (b !== BACKSLASH) {
        this.pos++;
        continue;
      }
      if (decode) text += utf8.decode(bytes.subarray(runStart, this.pos));
      const escape = bytes[this.pos + 1];
      if (escape === 0x75) {
        for (let i = 2; i < 6; i++) if (!isHex(bytes[this.pos + i])) fail();
        // Lone surrogates stay as code units; a pair written as two escapes joins in the JS string.
        if (decode) text += String.fromCharCode(Number.parseInt(utf8.decode(bytes.subarray(this.pos + 2, this.pos + 6)), 16));
        this.pos += 6;
      } else {
        const char = escape === undefined ? undefined : simpleEscapes[escape];
        if (char === undefined) fail();
        if (decode) text += char;
        this.pos += 2;
      }
      runStart = this.pos;
    }
    if (decode) text += utf8.decode(bytes.subarray(runStart, this.pos));
    this.pos++; // closing quote
    return partlyHidden ? null : text;
  }

  private readObject(start: number, depth: number): JsonNode {
    this.pos++;
    const members: JsonMember[] = [];
    this.skipWhitespace();
    if (this.bytes[this.pos] === 0x7d) {
      this.pos++;
      return { kind: "object", range: { start, end: this.pos }, members };
    }
    for (;;) {
      this.skipWhitespace();
      const keyStart = this.pos;
      let key: string | null = null;
      if (this.hiddenAt(this.pos)) this.hiddenRun();
      else if (this.bytes[this.pos] === QUOTE) key = this.readString(true);
      else fail();
      const keyRange = { start: keyStart, end: this.pos };
      this.skipWhitespace();
      if (this.bytes[this.pos++] !== 0x3a) fail();
      members.push({ key, keyRange, value: this.readValue(depth + 1) });
      this.skipWhitespace();
      const next = this.bytes[this.pos++];
      if (next === 0x7d) return { kind: "object", range: { start, end: this.pos }, members };
      if (next !== 0x2c) fail();
    }
  }

  private readArray(start: number, depth: number): JsonNode {
    this.pos++;
    const items: JsonNode[] = [];
    this.skipWhitespace();
    if (this.bytes[this.pos] === 0x5d) {
      this.pos++;
      return { kind: "array", range: { start, end: this.pos }, items };
    }
    for (;;) {
      items.push(this.readValue(depth + 1));
      this.skipWhitespace();
      const next = this.bytes[this.pos++];
      if (next === 0x5d) return { kind: "array", range: { start, end: this.pos }, items };
      if (next !== 0x2c) fail();
    }
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
