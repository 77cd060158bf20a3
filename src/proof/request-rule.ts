/**
 * The rule a revealed request with hidden spans keeps before a notary signs it (proxy mode on TLS 1.3, the request
 * written in epochs; an MPC proof's request can be held to it too). On top of requestHostProblem (check.ts: the
 * request line and exactly one Host, naming the verified server, revealed):
 * - one complete HTTP/1.1 request: request line `… HTTP/1.1`, a head ended by a revealed CRLF CRLF, a body framed
 *   by one revealed Content-Length (or none), nothing after it; no Transfer-Encoding;
 * - no hidden byte before the end of the Host line;
 * - each hidden span inside one header value whose name is revealed (Host's and Content-Length's are revealed
 *   whole), or inside the body as the value of a revealed name: a JSON member (`"name": …`, the
 *   value whole or a string's content) or a form field (`name=…`);
 * - each hidden span at most `maxHiddenSpanBytes` long.
 * What stays possible, and why the bound matters: hidden bytes can hold anything, a line break and another
 * header included; the notary sees their length only.
 */
import { bytesToBase64 } from "../core/bytes.ts";
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
  const inHead = fields.filter((field) => field.name.end <= headEnd);
  if (inHead.some((field) => nameOf(bytes, field) === "transfer-encoding")) return { problem: "the request has a Transfer-Encoding; only a body framed by Content-Length is accepted" };
  const lengths = inHead.filter((field) => nameOf(bytes, field) === "content-length");
  if (lengths.length > 1) return { problem: "the request has more than one Content-Length" };
  const lengthField = lengths[0];
  if (lengthField && (!isShown(lengthField.value) || !/^[0-9]+$/.test(text(bytes, lengthField.value)))) return { problem: "the request's Content-Length is hidden or not a number" };
  const bodyLength = lengthField ? Number(text(bytes, lengthField.value)) : 0;
  if (headEnd + bodyLength !== length) {
    return { problem: `the request is not one complete HTTP/1.1 request: its head and body make ${headEnd + bodyLength} bytes, but ${length} were sent` };
  }
  return { headEnd };
}

/** How far before a body value its name is looked for. */
const NAME_WINDOW = 1024;

/** The JSON member name or form field name right before a body value at `start`, when revealed. */
function revealsBodyName(view: View, bodyStart: number, start: number): { quoted: boolean } | null {
  const { bytes, isShown } = view;
  const quoted = bytes[start - 1] === 0x22;
  const at = quoted ? start - 1 : start;
  const from = Math.max(bodyStart, at - NAME_WINDOW);
  const before = text(bytes, { start: from, end: at });
  const json = /"(?:[^"\\\0]|\\.)*"\s*:\s*$/.exec(before);
  if (json) return isShown({ start: from + json.index, end: at }) ? { quoted } : null;
  const form = /(?:^|&)[^&=\0]+=$/.exec(before);
  if (!form || quoted || (form[0][0] !== "&" && from !== bodyStart)) return null;
  return isShown({ start: from + form.index, end: at }) ? { quoted } : null;
}

/** Whether what follows a body value at `end` closes it: a JSON delimiter, a form separator, or the body's end. */
function closesBodyValue(bytes: Uint8Array, end: number, quoted: boolean): boolean {
  if (quoted) return bytes[end] === 0x22;
  const after = latin1.decode(bytes.subarray(end, end + 64));
  return after === "" || /^\s*[,}\]]/.test(after) || after.startsWith("&");
}

function spanProblem(view: View, fields: HeaderField[], span: ByteRange, hostLineEnd: number, headEnd: number, max: number): string | null {
  const { bytes, isShown } = view;
  if (span.end - span.start > max) return `${describe(span)} is ${span.end - span.start} bytes long; at most ${max} may be hidden in one span`;
  if (span.start < hostLineEnd) return `${describe(span)} starts before the end of the Host header; the request line and Host must be revealed whole`;
  if (span.end <= headEnd) {
    const field = fields.find((f) => f.value.start <= span.start && span.end <= f.value.end);
    // Host and Content-Length values are wholly revealed (checked above), and no Transfer-Encoding is allowed.
    if (!field || !isShown(field.name)) return `${describe(span)} is not inside a header value whose name is revealed`;
    return null;
  }
  if (span.start < headEnd) return `${describe(span)} runs from the head into the body`;
  const name = revealsBodyName(view, headEnd, span.start);
  if (!name || !closesBodyValue(bytes, span.end, name.quoted)) return `${describe(span)} is not a body value whose name is revealed (a JSON member or a form field)`;
  return null;
}

/** A proof's sent direction from a request known but for its hidden spans (the notary's check of the epochs). */
export function partlyRevealedDirection(request: { bytes: Uint8Array; hidden: readonly ByteRange[] }): TranscriptDirection {
  const revealed = complementRanges(request.bytes.length, request.hidden).map((range) => ({ ...range, data: bytesToBase64(request.bytes.subarray(range.start, range.end)) }));
  return { length: request.bytes.length, revealed };
}

/** The first rule the revealed request breaks, or null when it keeps them all. */
export function revealedRequestProblem(sent: TranscriptDirection, serverName: string, maxHiddenSpanBytes: number): string | null {
  const hostProblem = requestHostProblem(sent, serverName);
  if (hostProblem) return hostProblem;
  const view = revealedView(sent);
  const message = parseHttpMessage(view.bytes);
  if (!text(view.bytes, message.startLine).endsWith(" HTTP/1.1")) return "the request is not an HTTP/1.1 request";
  const framed = framing(view, message.headers, sent.length);
  if ("problem" in framed) return framed.problem;
  const host = message.headers.find((field) => nameOf(view.bytes, field) === "host")!;
  const hostLineEnd = indexOfBytes(view.bytes, HEAD_END.subarray(0, 2), host.value.end) + 2;
  for (const span of complementRanges(sent.length, sent.revealed)) {
    const problem = spanProblem(view, message.headers, span, hostLineEnd, framed.headEnd, maxHiddenSpanBytes);
    if (problem) return problem;
  }
  return null;
}
