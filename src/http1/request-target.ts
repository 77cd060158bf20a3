/**
 * The request target of a request line, split into path segments and query parameters, as raw byte offsets.
 * Nothing is percent-decoded: names and values are the bytes on the wire.
 */
import type { ByteRange } from "../core/transcript.ts";

const SP = 0x20;
const SLASH = 0x2f;
const QUESTION = 0x3f;
const HASH = 0x23;
const AMPERSAND = 0x26;
const EQUALS = 0x3d;
const schemeSeparator = new TextEncoder().encode("://");

export interface QueryParameter {
  name: ByteRange;
  /** Empty when the parameter has no `=` or nothing after it. */
  value: ByteRange;
}

function indexIn(bytes: Uint8Array, byte: number, start: number, end: number): number {
  const at = bytes.subarray(start, end).indexOf(byte);
  return at < 0 ? end : start + at;
}

function firstOf(bytes: Uint8Array, anyOf: readonly number[], start: number, end: number): number {
  return Math.min(...anyOf.map((byte) => indexIn(bytes, byte, start, end)));
}

/** The target between the method and the version: `METHOD SP target SP HTTP/1.1`. */
export function requestTarget(bytes: Uint8Array, requestLine: ByteRange): ByteRange | null {
  const line = bytes.subarray(requestLine.start, requestLine.end);
  const firstSpace = line.indexOf(SP);
  if (firstSpace < 0) return null;
  const lastSpace = line.lastIndexOf(SP);
  const end = lastSpace > firstSpace ? lastSpace : line.length;
  return { start: requestLine.start + firstSpace + 1, end: requestLine.start + end };
}

/** The path part: origin-form `/p?q`, or absolute-form `scheme://authority/p?q` without its authority. */
function pathOf(bytes: Uint8Array, target: ByteRange): ByteRange | null {
  let start = target.start;
  if (bytes[start] !== SLASH) {
    const separator = bytes.subarray(target.start, target.end).indexOf(schemeSeparator[0]!);
    const isAbsolute =
      separator >= 0 && schemeSeparator.every((b, i) => bytes[target.start + separator + i] === b);
    if (!isAbsolute) return null; // asterisk-form or authority-form: no path
    start = firstOf(bytes, [SLASH, QUESTION, HASH], target.start + separator + schemeSeparator.length, target.end);
    if (bytes[start] !== SLASH) return null;
  }
  return { start, end: firstOf(bytes, [QUESTION, HASH], start, target.end) };
}

/** Segments between slashes after the leading one: `/a/b/` has `a`, `b` and an empty third. */
export function pathSegments(bytes: Uint8Array, target: ByteRange): ByteRange[] {
  const path = pathOf(bytes, target);
  if (!path || path.start >= path.end) return [];
  const segments: ByteRange[] = [];
  for (let start = path.start + 1; start <= path.end; ) {
    const end = indexIn(bytes, SLASH, start, path.end);
    segments.push({ start, end });
    start = end + 1;
  }
  return segments;
}

/** `&`-separated parameters after the first `?`, up to a `#`. */
export function queryParameters(bytes: Uint8Array, target: ByteRange): QueryParameter[] {
  const question = indexIn(bytes, QUESTION, target.start, target.end);
  if (question === target.end) return [];
  const end = indexIn(bytes, HASH, question, target.end);
  const parameters: QueryParameter[] = [];
  for (let start = question + 1; start <= end; ) {
    const pairEnd = indexIn(bytes, AMPERSAND, start, end);
    const equals = indexIn(bytes, EQUALS, start, pairEnd);
    parameters.push({
      name: { start, end: equals },
      value: { start: Math.min(equals + 1, pairEnd), end: pairEnd },
    });
    start = pairEnd + 1;
  }
  return parameters;
}
