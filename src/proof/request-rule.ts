/**
 * The rule a revealed request with hidden spans keeps before a notary signs it, decided on what the notary saw
 * (proxy mode on TLS 1.3, the request written in epochs: the notary reads a hidden epoch's length only). A hidden
 * span can hold anything, a blank line ending the head and a second request included, so only the bytes before the
 * first hidden one are proven to be what the server read; the rule makes the proof claim no more than that:
 * - on top of requestHostProblem (check.ts: the request line and exactly one Host, naming the verified server,
 *   revealed): one complete HTTP/1.1 request, a head ended by a revealed CRLF CRLF, a body framed by one revealed
 *   Content-Length (or none), nothing after it, no Transfer-Encoding;
 * - no hidden byte before the end of the Host line, and the first hidden span starts a header value whose name is
 *   revealed, or a whole header line, or the body;
 * - **no revealed byte after a hidden one** but the CR LF that ends a hidden header line and the final CR LF CR LF:
 *   hidden header values form a trailing block of the head, and a body after a hidden byte (or holding one) is
 *   hidden whole, the proof showing its length only;
 * - each hidden span of the head at most `maxHiddenSpanBytes` long.
 * What hidden header values can still do: add header lines of their own (HIDDEN_HEADERS_CAN_ADD).
 */
import { bytesToBase64 } from "../base/bytes.ts";
import { complementRanges } from "../core/ranges.ts";
import type { ByteRange } from "../core/transcript.ts";
import { type HeaderField, parseHttpMessage } from "../http1/message.ts";
import { requestHostProblem, revealedView } from "./check.ts";
import type { TranscriptDirection } from "./format.ts";

/** A default bound for a hidden span: room for a long bearer token or a cookie header's value. */
export const DEFAULT_MAX_HIDDEN_REQUEST_SPAN = 4096;

const latin1 = new TextDecoder("latin1");
const HEAD_END = new Uint8Array([0x0d, 0x0a, 0x0d, 0x0a]);

type View = ReturnType<typeof revealedView>;
const text = (bytes: Uint8Array, range: ByteRange): string => latin1.decode(bytes.subarray(range.start, range.end));
const nameOf = (bytes: Uint8Array, field: HeaderField): string => text(bytes, field.name).toLowerCase();
const describe = (span: ByteRange): string => `the hidden span at bytes ${span.start}..${span.end}`;

function indexOfBytes(bytes: Uint8Array, needle: Uint8Array, from: number): number {
  for (let i = from; i + needle.length <= bytes.length; i++) if (needle.every((b, j) => bytes[i + j] === b)) return i;
  return -1;
}

/** Where the head ends (after its blank line), or a problem with the request's framing. */
function framing(view: View, fields: HeaderField[], length: number): { headEnd: number } | { problem: string } {
  const { bytes, isShown } = view;
  const blank = indexOfBytes(bytes, HEAD_END, 0);
  if (blank < 0) return { problem: "the request's head does not end with a revealed blank line (CRLF CRLF)" };
  const headEnd = blank + HEAD_END.length;
  // The parsed fields are the head's (parseHttpMessage keeps a chunked body's trailers apart).
  if (fields.some((field) => nameOf(bytes, field) === "transfer-encoding")) return { problem: "the request has a Transfer-Encoding; only a body framed by Content-Length is accepted" };
  const lengths = fields.filter((field) => nameOf(bytes, field) === "content-length");
  if (lengths.length > 1) return { problem: "the request has more than one Content-Length" };
  const lengthField = lengths[0];
  if (lengthField && (!isShown(lengthField.value) || !/^[0-9]+$/.test(text(bytes, lengthField.value)))) return { problem: "the request's Content-Length is hidden or not a number" };
  const bodyLength = lengthField ? Number(text(bytes, lengthField.value)) : 0;
  if (headEnd + bodyLength !== length) {
    return { problem: `the request is not one complete HTTP/1.1 request: its head and body make ${headEnd + bodyLength} bytes, but ${length} were sent` };
  }
  return { headEnd };
}

/** A header line up to a point in its value: a token, a colon, then part of the value (RFC 9110 field-name). */
const FIELD_NAME_AND_COLON = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n]*$/;

/** Where the first hidden span may start: after a revealed header name on its line, at a line's start, or at the body. */
function firstSpanProblem(view: View, span: ByteRange, hostLineEnd: number, headEnd: number): string | null {
  if (span.start < hostLineEnd) return `${describe(span)} starts before the end of the Host header; the request line and Host must be revealed whole`;
  if (span.start >= headEnd) return span.start === headEnd && span.end === view.bytes.length ? null : `${describe(span)} hides part of the body; a body holding a hidden value is hidden whole`;
  const lineStart = view.bytes.lastIndexOf(0x0a, span.start - 1) + 1;
  const before = text(view.bytes, { start: lineStart, end: span.start });
  if (before === "" || FIELD_NAME_AND_COLON.test(before)) return null;
  return `${describe(span)} is not a header value whose name is revealed, nor a whole header line`;
}

/**
 * The first revealed range after the first hidden byte that is more than a line break: anything else there is not
 * proven to be what the server read (the hidden bytes before it may have ended the head, or the request).
 */
function revealedAfterHidden(view: View, revealed: readonly ByteRange[], firstHidden: number, headEnd: number): string | null {
  for (const range of revealed) {
    if (range.end <= firstHidden) continue;
    const shown = text(view.bytes, range);
    if ((shown === "\r\n" && range.end < headEnd) || (shown === "\r\n\r\n" && range.end === headEnd)) continue;
    return `the request reveals bytes ${range.start}..${range.end} after a hidden span: a hidden span may hold anything, a blank line ending the head included, so no revealed byte after one is proven to be what the server read (hidden header values must come last in the head, and a body after them is hidden whole)`;
  }
  return null;
}

/** A proof's sent direction from a request known but for its hidden spans (the notary's check of the epochs). */
export function partlyRevealedDirection(request: { bytes: Uint8Array; hidden: readonly ByteRange[] }): TranscriptDirection {
  const revealed = complementRanges(request.bytes.length, request.hidden).map((range) => ({ ...range, data: bytesToBase64(request.bytes.subarray(range.start, range.end)) }));
  return { length: request.bytes.length, revealed };
}

/** What a proof's hidden header values can still do, in one sentence, where a verifier reads it. */
export const HIDDEN_HEADERS_CAN_ADD = "hidden header values may hold header lines of their own: the revealed headers and request line are proven, what the hidden ones add is not";

/** Whether a revealed request hides bytes of its head (a header value or line): then HIDDEN_HEADERS_CAN_ADD holds for it. */
export function hidesHeaderValues(sent: TranscriptDirection): boolean {
  const blank = indexOfBytes(revealedView(sent).bytes, HEAD_END, 0);
  const headEnd = blank < 0 ? sent.length : blank;
  return complementRanges(sent.length, sent.revealed).some((span) => span.start < headEnd);
}

export interface RequestRuleOptions {
  /** Most bytes of one hidden span of the head. */
  maxHiddenSpanBytes: number;
}

/** The first rule the revealed request breaks, or null when it keeps them all. */
export function revealedRequestProblem(sent: TranscriptDirection, serverName: string, { maxHiddenSpanBytes }: RequestRuleOptions): string | null {
  const hostProblem = requestHostProblem(sent, serverName);
  if (hostProblem) return hostProblem;
  const view = revealedView(sent);
  const message = parseHttpMessage(view.bytes);
  if (!text(view.bytes, message.startLine).endsWith(" HTTP/1.1")) return "the request is not an HTTP/1.1 request";
  const framed = framing(view, message.headers, sent.length);
  if ("problem" in framed) return framed.problem;
  const spans = complementRanges(sent.length, sent.revealed);
  const [first] = spans;
  if (!first) return null;
  const host = message.headers.find((field) => nameOf(view.bytes, field) === "host")!;
  const hostLineEnd = indexOfBytes(view.bytes, HEAD_END.subarray(0, 2), host.value.end) + 2;
  const firstProblem = firstSpanProblem(view, first, hostLineEnd, framed.headEnd);
  if (firstProblem) return firstProblem;
  const after = revealedAfterHidden(view, sent.revealed, first.start, framed.headEnd);
  if (after) return after;
  // A hidden body is a length only; what a span of the head may hold, only its length bounds.
  const long = spans.find((span) => span.end <= framed.headEnd && span.end - span.start > maxHiddenSpanBytes);
  return long ? `${describe(long)} is ${long.end - long.start} bytes long; at most ${maxHiddenSpanBytes} may be hidden in one span` : null;
}
