/**
 * Where each pattern's values are, in a transcript where some bytes are already hidden.
 *
 * "Find on the visible view": a pattern may only be located through bytes that are still visible. What
 * locates it must be entirely visible; the value it then hides may overlap bytes already hidden.
 * - req:header / res:header: the header name bytes (before the colon, whitespace trimmed).
 * - req:body / res:body: every object key token along the path, quotes included. Array indices and the
 *   empty path (whole body) are positional: nothing to see, always found.
 * - res:query: the parameter name bytes (before `=`).
 * - res:path: positional (counted by `/` on the raw request target), always found.
 * - search: every byte of the occurrence, in the logical response (chunk framing left out).
 * Structure (line breaks, colons, JSON punctuation, chunk framing) is read from the real bytes whether or not
 * hidden: it locates nothing by itself.
 */
import type { ByteRange } from "../proof/format.ts";
import { type HttpMessage, parseHttpMessage } from "../http1/message.ts";
import { type JsonNode, parseJson, valuesAtPath } from "./json.ts";
import type { RedactionPattern } from "./patterns.ts";
import { complementRanges, mergeRanges, overlapsAny, type RangesByDirection } from "./spans.ts";
import { pathSegments, queryParameters, requestTarget } from "./target.ts";
import { type ByteView, rawRangesOf, viewOf } from "./view.ts";

interface ParsedBody {
  view: ByteView;
  /** Null when the body is not exactly one JSON value. */
  json: JsonNode | null;
}

interface ParsedSide {
  bytes: Uint8Array;
  message: HttpMessage;
  body: ParsedBody;
}

export interface ParsedTranscript {
  request: ParsedSide;
  response: ParsedSide;
  /** Request target on the request line, if there is one. */
  target: ByteRange | null;
  /** The response as `search:` sees it: everything but chunk framing. */
  searchView: ByteView;
}

const utf8 = new TextEncoder();

function parseSide(bytes: Uint8Array): ParsedSide {
  const message = parseHttpMessage(bytes);
  const view = viewOf(bytes, message.body);
  return { bytes, message, body: { view, json: parseJson(view.bytes) } };
}

export function parseTranscript(transcript: { sent: Uint8Array; recv: Uint8Array }): ParsedTranscript {
  const request = parseSide(transcript.sent);
  const response = parseSide(transcript.recv);
  return {
    request,
    response,
    target: requestTarget(request.bytes, request.message.startLine),
    searchView: viewOf(response.bytes, complementRanges(response.bytes.length, response.message.framing)),
  };
}

const lowerAscii = (b: number) => (b >= 0x41 && b <= 0x5a ? b + 0x20 : b);

function bytesEqual(bytes: Uint8Array, range: ByteRange, expected: Uint8Array, ignoreAsciiCase: boolean): boolean {
  if (range.end - range.start !== expected.length) return false;
  const fold = ignoreAsciiCase ? lowerAscii : (b: number) => b;
  return expected.every((b, i) => fold(bytes[range.start + i]!) === fold(b));
}

function headerValues(side: ParsedSide, name: string, hidden: readonly ByteRange[]): ByteRange[] {
  const wanted = utf8.encode(name);
  return side.message.headers
    .filter((field) => bytesEqual(side.bytes, field.name, wanted, true) && !overlapsAny(hidden, field.name))
    .map((field) => field.value);
}

function bodyValues(body: ParsedBody, path: readonly string[], hidden: readonly ByteRange[]): ByteRange[] {
  if (path.length === 0) return body.view.pieces.map((piece) => piece.raw);
  if (!body.json) return [];
  const keyVisible = (key: ByteRange) => !rawRangesOf(body.view, key.start, key.end).some((r) => overlapsAny(hidden, r));
  return valuesAtPath(body.json, path, keyVisible).flatMap((node) =>
    rawRangesOf(body.view, node.range.start, node.range.end),
  );
}

function queryValues(t: ParsedTranscript, name: string, hidden: readonly ByteRange[]): ByteRange[] {
  if (!t.target) return [];
  const wanted = utf8.encode(name);
  const bytes = t.request.bytes;
  return queryParameters(bytes, t.target)
    .filter((p) => bytesEqual(bytes, p.name, wanted, false) && !overlapsAny(hidden, p.name))
    .map((p) => p.value);
}

function pathSegment(t: ParsedTranscript, segment: number): ByteRange[] {
  const range = t.target ? pathSegments(t.request.bytes, t.target)[segment - 1] : undefined;
  return range ? [range] : [];
}

function occurrences(view: ByteView, text: string, hidden: readonly ByteRange[]): ByteRange[] {
  const needle = utf8.encode(text);
  const haystack = view.bytes;
  const found: ByteRange[] = [];
  for (let at = haystack.indexOf(needle[0]!); at >= 0 && at + needle.length <= haystack.length; at = haystack.indexOf(needle[0]!, at + 1)) {
    if (!needle.every((b, i) => haystack[at + i] === b)) continue;
    const raw = rawRangesOf(view, at, at + needle.length);
    if (!raw.some((r) => overlapsAny(hidden, r))) found.push(...raw);
  }
  return found;
}

/** The spans `pattern` hides, per direction, sorted and merged; empty values contribute nothing. */
export function findSpans(t: ParsedTranscript, pattern: RedactionPattern, hidden: RangesByDirection): RangesByDirection {
  const sent = (ranges: ByteRange[]) => ({ sent: mergeRanges(ranges), recv: [] });
  const recv = (ranges: ByteRange[]) => ({ sent: [], recv: mergeRanges(ranges) });
  switch (pattern.kind) {
    case "req:header":
      return sent(headerValues(t.request, pattern.name, hidden.sent));
    case "res:header":
      return recv(headerValues(t.response, pattern.name, hidden.recv));
    case "req:body":
      return sent(bodyValues(t.request.body, pattern.path, hidden.sent));
    case "res:body":
      return recv(bodyValues(t.response.body, pattern.path, hidden.recv));
    case "res:query":
      return sent(queryValues(t, pattern.name, hidden.sent));
    case "res:path":
      return sent(pathSegment(t, pattern.segment));
    case "search":
      return recv(occurrences(t.searchView, pattern.text, hidden.recv));
  }
}
