/**
 * The consistency rules of a proof body's transcript and redaction list, in one place: the notary runs them
 * before it signs (src/notary/attest.ts) and `cli verify` runs them on every proof, so a notary never signs
 * what a verifier then rejects.
 */
import { base64ToBytes, bytesToBase64 } from "../base/bytes.ts";
import { sameServerName } from "../core/server-name.ts";
import { isFieldName, parseHttpMessage } from "../http1/message.ts";
import type { ProofBody, RevealedRange, TranscriptDirection } from "./format.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";
import { modeFacts } from "./modes.ts";
import { isCheckedBody, proofModeOf } from "./older-proofs.ts";

/** Strict base64: canonical padding and alphabet, so each byte string has one encoding. Null when not. */
export function decodeBase64(data: string): Uint8Array | null {
  const bytes = base64ToBytes(data);
  return bytes && bytesToBase64(bytes) === data ? bytes : null;
}

function directionProblem(direction: Direction, transcript: TranscriptDirection): string | null {
  let previousEnd = -1;
  for (const [i, { start, end, data }] of transcript.revealed.entries()) {
    const at = `body.transcript.${direction}.revealed[${i}]`;
    if (start >= end) return `${at}: empty or reversed range ${start}..${end}`;
    if (end > transcript.length) return `${at}: range ${start}..${end} exceeds the ${direction} length ${transcript.length}`;
    if (start < previousEnd) return `${at}: ranges not sorted or overlapping (starts at ${start}, previous ends at ${previousEnd})`;
    if (start === previousEnd) return `${at}: adjacent to the previous range (adjacent ranges must be merged)`;
    const bytes = decodeBase64(data);
    if (!bytes) return `${at}.data: not valid base64`;
    if (bytes.length !== end - start) return `${at}.data: holds ${bytes.length} bytes, but the range ${start}..${end} spans ${end - start}`;
    previousEnd = end;
  }
  return null;
}

const directionOrder: Record<Direction, number> = { sent: 0, recv: 1 };

/** The first revealed range ending after `position`, by binary search over sorted, disjoint ranges; null when none does. */
function revealedAfter(revealed: readonly RevealedRange[], position: number): RevealedRange | null {
  let low = 0;
  let high = revealed.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((revealed[middle] as RevealedRange).end <= position) low = middle + 1;
    else high = middle;
  }
  return revealed[low] ?? null;
}

/**
 * Each declared entry: matched exactly when it has spans; spans non-empty, inside their direction, in one
 * normal form (sent before recv, sorted, neither overlapping nor touching), and hidden: a declared span
 * overlapping revealed bytes would claim to hide what the proof shows.
 */
function redactionsProblem(body: Pick<ProofBody, "transcript" | "redactions">): string | null {
  for (const [i, { spans, matched }] of body.redactions.entries()) {
    if (matched !== spans.length > 0) return `body.redactions[${i}]: "matched" is ${matched} but it has ${spans.length} spans`;
    for (const [j, { direction, start, end }] of spans.entries()) {
      const at = `body.redactions[${i}].spans[${j}]`;
      const transcript = body.transcript[direction];
      if (start >= end) return `${at}: empty or reversed span ${start}..${end}`;
      if (end > transcript.length) return `${at}: span ${start}..${end} exceeds the ${direction} length ${transcript.length}`;
      const previous = spans[j - 1];
      if (previous && (directionOrder[previous.direction] > directionOrder[direction] || (previous.direction === direction && previous.end >= start))) {
        return `${at}: spans not in order (sent before recv, sorted, not overlapping or touching)`;
      }
      // The revealed ranges are sorted and disjoint (directionProblem ran first): one binary search per span.
      const next = revealedAfter(transcript.revealed, start);
      const leak = next && next.start < end ? next : null;
      if (leak) return `${at}: declared hidden, but ${direction} bytes ${Math.max(start, leak.start)}..${Math.min(end, leak.end)} are revealed`;
    }
  }
  return null;
}

/**
 * Most entries one proof may list: its revealed ranges (both directions), declared redactions and their spans,
 * counted together. Hiding k values takes about 2k entries, so this allows some 32,000 hidden values; it bounds
 * what a verifier reads and renders. The notary runs this check before it signs, so it never signs a proof
 * a verifier refuses. docs/proof-format.md states it.
 */
export const MAX_PROOF_ENTRIES = 65_536;

function entriesProblem(body: Pick<ProofBody, "transcript" | "redactions">): string | null {
  const { sent, recv } = body.transcript;
  const entries = body.redactions.reduce((count, redaction) => count + 1 + redaction.spans.length, sent.revealed.length + recv.revealed.length);
  if (entries <= MAX_PROOF_ENTRIES) return null;
  return `body lists ${entries} revealed ranges, redactions and spans together; a proof holds at most ${MAX_PROOF_ENTRIES} (MAX_PROOF_ENTRIES)`;
}

/**
 * The first rule the body breaks, naming the field at fault, or null when it keeps them all. Bounded and
 * linear but for a binary search per declared span: a verifier may run it on anything it was handed.
 */
export function proofBodyProblem(body: Pick<ProofBody, "transcript" | "redactions">): string | null {
  return entriesProblem(body) ?? directionProblem("sent", body.transcript.sent) ?? directionProblem("recv", body.transcript.recv) ?? redactionsProblem(body);
}

/** The fields a notary that checks the answer (answer-rule.ts) writes, all of them or (an older proof) none. */
const CHECKED_FIELDS = ["responseTime", "responseFraming", "request"] as const;

/** The facts of the body's mode as far as this process knows it (a mode nobody registered has none). */
const factsOf = (body: Pick<ProofBody, "mode">) => modeFacts(proofModeOf(body));

/**
 * Whether the notary never saw the request, so the proof shows none of it. An older proof says nothing: a
 * proxy-mode one (a mode whose notary may hide it) with no sent byte revealed hid it.
 */
export const isHiddenRequest = (body: Pick<ProofBody, "request" | "mode" | "transcript">): boolean =>
  body.request === "hidden" || (body.request === undefined && factsOf(body)?.mayHideRequest === true && body.transcript.sent.revealed.length === 0);

/** Why the fields of a checked answer do not hold together, or null. */
export function checkedFieldsProblem(body: ProofBody): string | null {
  const present = CHECKED_FIELDS.filter((field) => body[field] !== undefined);
  if (present.length > 0 && present.length < CHECKED_FIELDS.length) {
    return `body: ${CHECKED_FIELDS.join(", ")} come together; this proof has only ${present.join(", ")}`;
  }
  const facts = factsOf(body);
  const mode = proofModeOf(body);
  if (body.serverPort !== undefined && !facts?.notaryDials) return `body.serverPort: a notary in ${mode} mode never dials the server`;
  if (!isCheckedBody(body)) return null;
  if (facts?.notaryDials && body.serverPort === undefined) return `body.serverPort: a proof of ${mode} mode names the port its notary dialled`;
  if (body.responseTime! < body.connectionTime) return `body.responseTime ${body.responseTime} is before body.connectionTime ${body.connectionTime}`;
  if (body.request === "hidden" && body.transcript.sent.revealed.length > 0) return 'body.request is "hidden" but sent bytes are revealed';
  if (body.request === "hidden" && !facts?.mayHideRequest) return `body.request: a notary in ${mode} mode never leaves the request unseen`;
  return null;
}

/**
 * A direction's bytes as the revealed ranges show them: hidden bytes are zero (never a line break, a space or
 * a colon, so HTTP structure is read from revealed bytes only), and `isShown` tells whether a range is wholly
 * revealed. Meant for a checked direction (proofBodyProblem passed).
 */
export function revealedView(direction: TranscriptDirection): { bytes: Uint8Array; isShown(range: ByteRange): boolean } {
  const bytes = new Uint8Array(direction.length);
  const shown = new Uint8Array(direction.length);
  for (const range of direction.revealed) {
    bytes.set(decodeBase64(range.data) ?? new Uint8Array(), range.start);
    shown.fill(1, range.start, range.end);
  }
  return { bytes, isShown: (range) => shown.subarray(range.start, range.end).every((b) => b === 1) };
}

const latin1 = new TextDecoder("latin1");

/**
 * Why the request does not show the host the notary verified, or null. The proof's server name is the one the
 * certificate proved; the request must say it asked that server: its request line revealed but for the target's
 * path and query (method, origin-form "/", version), and one Host field, wholly revealed, naming that server
 * (case-blind, a trailing dot aside: src/core/server-name.ts) and, when the port is known (`port`: the one a notary
 * dialled), that port: absent only for 443. Otherwise a proof of api.example.com could carry a request the reader
 * takes for another server, or another service of the same host.
 */
export function requestHostProblem(sent: TranscriptDirection, serverName: string, port?: number): string | null {
  const { bytes, isShown } = revealedView(sent);
  const message = parseHttpMessage(bytes);
  const line = latin1.decode(bytes.subarray(message.startLine.start, message.startLine.end));
  const firstSpace = line.indexOf(" ");
  const version = line.lastIndexOf(" ");
  const { start } = message.startLine;
  if (firstSpace <= 0 || version <= firstSpace || !isShown({ start, end: start + firstSpace + 2 }) || line[firstSpace + 1] !== "/") {
    return "the request line's method and the start of its target must be revealed (an origin-form target, /…)";
  }
  if (!isShown({ start: start + version, end: message.startLine.end }) || !/^ HTTP\/1\.[01]$/.test(line.slice(version))) {
    return "the request line's HTTP version must be revealed";
  }
  const hosts = message.headers.filter((field) => isShown(field.name) && isFieldName(bytes, field.name, "host"));
  if (hosts.length !== 1) return `the request must reveal exactly one Host header (found ${hosts.length})`;
  const host = hosts[0]!;
  if (!isShown(host.value)) return "the request's Host header value is hidden";
  const value = latin1.decode(bytes.subarray(host.value.start, host.value.end));
  const portText = /:([0-9]+)$/.exec(value)?.[1];
  const name = portText === undefined ? value : value.slice(0, -portText.length - 1);
  if (!sameServerName(name, serverName)) return `the request's Host header names ${JSON.stringify(value)}, not the verified server ${serverName}`;
  if (port !== undefined && (portText === undefined ? 443 : Number(portText)) !== port) {
    return `the request's Host header names ${JSON.stringify(value)}, not port ${port}, the one the notary dialled${portText === undefined ? " (a Host without a port names 443)" : ""}`;
  }
  return null;
}
