/**
 * Where each pattern's values are, located on the full transcript the prover holds.
 *
 * Every pattern is located on the real bytes, whatever other patterns hide: a header name, the JSON keys
 * along a path, a query name or a search text locates its values even when those locating bytes are hidden
 * themselves (by an earlier pattern, or by this one). Hiding can therefore never make a later pattern miss
 * what it names; the caller hides the union of all spans.
 * - req:header / res:header: every field line with that name (case-insensitive), in the head, in interim 1xx
 *   heads and in chunked trailers; the value without surrounding whitespace.
 * - req:body / res:body: the JSON values at the path (every duplicate key followed), in the de-chunked body
 *   after an optional byte-order mark; a body that is not JSON (compressed, text, truncated) has no values.
 *   The empty path is the whole body, whatever it holds.
 * - res:query: values of parameters with that raw name. res:path: one segment, by position.
 * - search: every occurrence in the response (see search.ts for what is decoded).
 * Structure (line breaks, colons, JSON punctuation, chunk framing) is read from the real bytes.
 */
import { type HttpMessage, isFieldName, lowerAsciiLetters, parseHttpMessage } from "../http1/message.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";
import { decodeString, type JsonNode, parseJson, valuesAtPath } from "../http1/json.ts";
import type { HidingPattern } from "./patterns.ts";
import { credentialParts } from "./credentials.ts";
import { echoOccurrences, occurrences, type SearchSpace, searchSpaceOf } from "./search.ts";
import { complementRanges, mergeRanges, type RangesByDirection } from "../core/ranges.ts";
import { pathSegments, queryParameters, requestTarget } from "../http1/request-target.ts";
import { type ByteView, rawRangesOf, viewOf } from "../core/byte-view.ts";

interface ParsedSide {
  bytes: Uint8Array;
  message: HttpMessage;
  body: ByteView;
  /** Null when the body is not exactly one JSON value. */
  json: JsonNode | null;
  search: SearchSpace;
}

export interface ParsedTranscript {
  sent: ParsedSide;
  recv: ParsedSide;
  /** Request target on the request line, if there is one. */
  target: ByteRange | null;
}

/** A pattern's hidden spans, and the values it hid as they could be met again elsewhere in the transcript. */
export interface Found {
  spans: RangesByDirection;
  /**
   * Each value's bytes (de-chunked); for a JSON string also its content without quotes, raw and decoded;
   * for a header, a decoded Basic credential (credentials.ts).
   */
  values: Uint8Array[];
  /** Pieces of a header's value that are secrets on their own: a credential after its scheme, cookie values. */
  parts: Uint8Array[];
}

const utf8 = new TextEncoder();

function parseSide(bytes: Uint8Array): ParsedSide {
  const message = parseHttpMessage(bytes);
  const body = viewOf(bytes, message.body);
  const json = parseJson(body.bytes);
  const plain = viewOf(bytes, complementRanges(bytes.length, message.framing));
  return { bytes, message, body, json, search: searchSpaceOf(plain, body, json) };
}

export function parseTranscript(transcript: { sent: Uint8Array; recv: Uint8Array }): ParsedTranscript {
  const sent = parseSide(transcript.sent);
  return { sent, recv: parseSide(transcript.recv), target: requestTarget(sent.bytes, sent.message.startLine) };
}

function bytesEqual(bytes: Uint8Array, range: ByteRange, expected: Uint8Array): boolean {
  return range.end - range.start === expected.length && expected.every((b, i) => bytes[range.start + i] === b);
}

/** One pattern's matches: raw ranges (unmerged) and the values they hold (see Found). */
interface Located {
  ranges: ByteRange[];
  values: Uint8Array[];
  parts: Uint8Array[];
}

const nothing: Located = { ranges: [], values: [], parts: [] };

/** Raw ranges, each also a value of its own bytes. */
function rawValues(bytes: Uint8Array, ranges: ByteRange[]): Located {
  return { ranges, values: ranges.map((r) => bytes.slice(r.start, r.end)), parts: [] };
}

function headerValues(side: ParsedSide, name: string): Located {
  // A name is one char per byte (a token, or a default's name read from the request's bytes); HTTP folds the case of
  // its ASCII letters only.
  const lowerName = lowerAsciiLetters(name);
  const ranges = side.message.headers.filter((field) => isFieldName(side.bytes, field.name, lowerName)).map((field) => field.value);
  const located = rawValues(side.bytes, ranges);
  const inside = located.values.map((value) => credentialParts(name, value));
  return { ranges, values: [...located.values, ...inside.flatMap((c) => c.whole)], parts: inside.flatMap((c) => c.parts) };
}

function bodyValues(side: ParsedSide, path: readonly string[]): Located {
  if (path.length === 0) {
    return { ranges: side.body.pieces.map((piece) => piece.raw), values: [side.body.bytes], parts: [] };
  }
  if (!side.json) return nothing;
  const nodes = valuesAtPath(side.json, path);
  const text = side.body.bytes;
  return {
    ranges: nodes.flatMap((node) => rawRangesOf(side.body, node.range.start, node.range.end)),
    values: nodes.flatMap((node) => {
      const whole = text.slice(node.range.start, node.range.end);
      if (node.kind !== "string") return [whole];
      return [whole, text.slice(node.range.start + 1, node.range.end - 1), decodeString(text, node.range).bytes];
    }),
    parts: [],
  };
}

function queryValues(t: ParsedTranscript, name: string): Located {
  if (!t.target) return nothing;
  const wanted = utf8.encode(name);
  const bytes = t.sent.bytes;
  const ranges = queryParameters(bytes, t.target).filter((p) => bytesEqual(bytes, p.name, wanted)).map((p) => p.value);
  return rawValues(bytes, ranges);
}

function pathSegment(t: ParsedTranscript, segment: number): Located {
  const range = t.target ? pathSegments(t.sent.bytes, t.target)[segment - 1] : undefined;
  return rawValues(t.sent.bytes, range ? [range] : []);
}

function searchValues(side: ParsedSide, text: string): Located {
  const needle = utf8.encode(text);
  const ranges = occurrences(side.search, needle);
  return { ranges, values: ranges.length > 0 ? [needle] : [], parts: [] };
}

function locate(t: ParsedTranscript, pattern: HidingPattern): [Direction, Located] {
  switch (pattern.kind) {
    case "req:header":
      return ["sent", headerValues(t.sent, pattern.name)];
    case "res:header":
      return ["recv", headerValues(t.recv, pattern.name)];
    case "req:body":
      return ["sent", bodyValues(t.sent, pattern.path)];
    case "res:body":
      return ["recv", bodyValues(t.recv, pattern.path)];
    case "res:query":
      return ["sent", queryValues(t, pattern.name)];
    case "res:path":
      return ["sent", pathSegment(t, pattern.segment)];
    case "search":
      return ["recv", searchValues(t.recv, pattern.text)];
  }
}

/** The spans `pattern` hides, per direction, sorted and merged (empty values contribute none), and its values. */
export function findSpans(t: ParsedTranscript, pattern: HidingPattern): Found {
  const [direction, { ranges, values, parts }] = locate(t, pattern);
  const spans: RangesByDirection = { sent: [], recv: [] };
  spans[direction] = mergeRanges(ranges);
  const hidSomething = spans[direction].length > 0;
  return { spans, values: hidSomething ? values : [], parts: hidSomething ? parts : [] };
}

/** Every occurrence of `value` in either direction, as raw ranges, percent-encoded ones included. */
export function findEverywhere(t: ParsedTranscript, value: Uint8Array): RangesByDirection {
  return { sent: echoOccurrences(t.sent.search, value), recv: echoOccurrences(t.recv.search, value) };
}
