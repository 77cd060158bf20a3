/**
 * Finding a byte string in one side of a transcript, wherever a reader of the revealed bytes would see it:
 * in the message with chunk framing left out, and inside the body's JSON strings with their escapes resolved
 * (`\u0041`, `\/`, `\"`, surrogate pairs: any escape RFC 8259 allows). Echoes are also found percent-encoded
 * (percent.ts). Nothing else is decoded: not base64, not HTML entities, not a compressed body.
 */
import type { ByteRange } from "../core/transcript.ts";
import { decodeString, type DecodedString, type JsonNode, stringTokens } from "../http1/json.ts";
import { percentEncodedRuns } from "./percent.ts";
import { type ByteView, rawRangesOf } from "../core/byte-view.ts";

export interface SearchSpace {
  /** The message without chunk framing. */
  plain: ByteView;
  /** The body, de-chunked. */
  body: ByteView;
  /** The body's JSON strings that hold escapes, decoded; sources are offsets in `body`. */
  escaped: DecodedString[];
  /** The runs of `plain` holding percent-escapes, decoded; sources are offsets in `plain`. */
  percentEncoded: DecodedString[];
}

const BACKSLASH = 0x5c;

export function searchSpaceOf(plain: ByteView, body: ByteView, json: JsonNode | null): SearchSpace {
  const escaped = json
    ? stringTokens(json)
        .filter((token) => body.bytes.subarray(token.start, token.end).includes(BACKSLASH))
        .map((token) => decodeString(body.bytes, token))
    : [];
  return { plain, body, escaped, percentEncoded: percentEncodedRuns(plain.bytes) };
}

/** Start offsets of every occurrence of `needle` in `haystack`, overlapping ones included. */
function matchStarts(haystack: Uint8Array, needle: Uint8Array): number[] {
  const buffer = Buffer.from(haystack.buffer, haystack.byteOffset, haystack.length);
  const starts: number[] = [];
  for (let at = buffer.indexOf(needle); at >= 0; at = buffer.indexOf(needle, at + 1)) starts.push(at);
  return starts;
}

/** The raw ranges of every occurrence of `needle` in `space` (unmerged; a match cut by chunk framing gives several). */
export function occurrences(space: SearchSpace, needle: Uint8Array): ByteRange[] {
  if (needle.length === 0) return [];
  const found = matchStarts(space.plain.bytes, needle).flatMap((at) => rawRangesOf(space.plain, at, at + needle.length));
  return [...found, ...decodedOccurrences(space.escaped, space.body, needle)];
}

/** Occurrences of `needle` in decoded texts, as the raw ranges of the bytes that wrote them. */
function decodedOccurrences(texts: readonly DecodedString[], view: ByteView, needle: Uint8Array): ByteRange[] {
  return texts.flatMap((text) =>
    matchStarts(text.bytes, needle).flatMap((at) => rawRangesOf(view, text.sources[at]!.start, text.sources[at + needle.length - 1]!.end)),
  );
}

/** As occurrences, and also written percent-encoded: where a hidden value's echo is looked for. */
export function echoOccurrences(space: SearchSpace, needle: Uint8Array): ByteRange[] {
  if (needle.length === 0) return [];
  return [...occurrences(space, needle), ...decodedOccurrences(space.percentEncoded, space.plain, needle)];
}
