/**
 * Redaction: which transcript bytes the prover keeps hidden, from the client's `T-REDACTED` entries.
 *
 * Every pattern is located on the full transcript (find.ts), so no pattern can make another miss what it
 * names, and the union of all their spans is hidden. Order only decides the order of the proof's list:
 * the client's entries as given (`reveal:` entries hide nothing and are not listed), then the credential
 * headers hidden by default that hid something (`default:req:header:cookie`), then `echo:*`: every further
 * occurrence, anywhere in either direction, of a value some pattern hid (values of MIN_ECHO_LENGTH bytes
 * or more), so a server that echoes a hidden value does not reveal it. Also looked for: the secrets inside a
 * hidden header's value (credentials.ts: of MIN_PART_LENGTH bytes or more), and each in the other spellings
 * a server may write it in (encodings.ts; percent-encoded wherever it stands, percent.ts).
 */
import type { DeclaredRedaction } from "../proof/format.ts";
import type { ByteRange, RedactionSpan } from "../core/transcript.ts";
import { echoSpellings } from "./encodings.ts";
import { findEverywhere, findSpans, type ParsedTranscript, parseTranscript } from "./find.ts";
import { DEFAULT_HIDDEN, type HidingPattern, type RedactionPattern, isDefaultHidden, isSecretHeaderName, publicPattern } from "./patterns.ts";
import { lowerAsciiLetters, parseHttpMessage } from "../http1/message.ts";
import { queryParameters, requestTarget } from "../http1/request-target.ts";

const latin1 = new TextDecoder("latin1");
import { complementRanges, mergeRanges, type RangesByDirection, subtractRanges } from "../core/ranges.ts";

export { parseRedactions, publicPattern, type RedactionPattern } from "./patterns.ts";

/** Shorter hidden values are not looked for elsewhere: they would hide every `null` or `200` in sight. */
export const MIN_ECHO_LENGTH = 4;
/**
 * Pieces of a hidden header (a credential after its scheme, a cookie's value, a Basic user or password) are
 * looked for from 6 bytes: shorter ones are ordinary words and numbers (`en`, `true`, `admin`, `guest`,
 * `12345`) that an answer holds for other reasons, and hiding each of them everywhere would hide the answer;
 * the header's whole value is still looked for from MIN_ECHO_LENGTH.
 */
export const MIN_PART_LENGTH = 6;
export const ECHO_PATTERN = "echo:*";
export const DEFAULT_PREFIX = "default:";

export interface RedactionResult {
  /** Union of all spans per direction, sorted and merged. */
  hidden: RangesByDirection;
  /** What the proof lists (see above). `matched` is true exactly when an entry has spans. */
  declared: DeclaredRedaction[];
  /** 1-based positions of the client's entries that matched nothing, in order. */
  unmatched: number[];
}

const spansOf = (ranges: RangesByDirection): RedactionSpan[] => [
  ...ranges.sent.map((r) => ({ direction: "sent" as const, ...r })),
  ...ranges.recv.map((r) => ({ direction: "recv" as const, ...r })),
];

/** The query parameters of the request whose names say they hold a secret (patterns.ts), by name as written. */
export function secretQueryNames(request: Uint8Array): string[] {
  const target = requestTarget(request, parseHttpMessage(request).startLine);
  if (!target) return [];
  const names = queryParameters(request, target).map((parameter) => latin1.decode(request.subarray(parameter.name.start, parameter.name.end)));
  return [...new Set(names.filter((name) => isDefaultHidden("res:query", name)))];
}

/**
 * What is hidden by default in this transcript (patterns.ts): the DEFAULT_HIDDEN names, and the request's headers and
 * query parameters whose names say they hold a secret; less what the client revealed or named itself.
 */
function defaultPatterns(patterns: readonly RedactionPattern[], parsed: ParsedTranscript): HidingPattern[] {
  const mentioned = (kind: string, name: string) =>
    patterns.some((p) => (p.kind === "reveal" ? p.header.kind === kind && p.header.name === name.toLowerCase() : p.kind === kind && "name" in p && p.name.toLowerCase() === name.toLowerCase()));
  const { bytes, message } = parsed.sent;
  // Each byte one char (not TextDecoder's latin1, which is windows-1252), only ASCII letters folded: the name then
  // finds exactly these fields (find.ts).
  const headerNames = message.headers.map((field) => lowerAsciiLetters(Buffer.from(bytes.subarray(field.name.start, field.name.end)).toString("latin1"))).filter(isSecretHeaderName);
  const found: HidingPattern[] = [
    ...DEFAULT_HIDDEN,
    ...[...new Set(headerNames)].filter((name) => !DEFAULT_HIDDEN.some((d) => d.kind === "req:header" && d.name === name)).map((name) => ({ kind: "req:header" as const, name })),
    ...secretQueryNames(bytes).map((name) => ({ kind: "res:query" as const, name })),
  ];
  return found.filter((pattern) => !mentioned(pattern.kind, (pattern as { name: string }).name));
}

/** What to look for: each value and part in each of its spellings, long enough, once. */
function needles(values: readonly Uint8Array[], parts: readonly Uint8Array[]): Uint8Array[] {
  // A spelling is as long as what it spells, or shorter when percent-decoded: each is measured.
  const spellings = (min: number) => (value: Uint8Array) => (value.length < min ? [] : echoSpellings(value).filter((s) => s.length >= min));
  const all = [...values.flatMap(spellings(MIN_ECHO_LENGTH)), ...parts.flatMap(spellings(MIN_PART_LENGTH))];
  const byText = new Map(all.map((needle) => [Buffer.from(needle).toString("latin1"), needle]));
  return [...byText.values()];
}

function echoes(parsed: ParsedTranscript, needles: readonly Uint8Array[], hidden: RangesByDirection): RangesByDirection {
  const found: RangesByDirection = { sent: [], recv: [] };
  for (const needle of needles) {
    const everywhere = findEverywhere(parsed, needle);
    found.sent.push(...everywhere.sent);
    found.recv.push(...everywhere.recv);
  }
  return { sent: subtractRanges(found.sent, hidden.sent), recv: subtractRanges(found.recv, hidden.recv) };
}

export function computeRedactions(transcript: { sent: Uint8Array; recv: Uint8Array }, patterns: readonly RedactionPattern[]): RedactionResult {
  const parsed = parseTranscript(transcript);
  const hidden: RangesByDirection = { sent: [], recv: [] };
  const values: Uint8Array[] = [];
  const parts: Uint8Array[] = [];
  const declared: DeclaredRedaction[] = [];
  const unmatched: number[] = [];
  const hide = (pattern: HidingPattern): RedactionSpan[] => {
    const found = findSpans(parsed, pattern);
    hidden.sent.push(...found.spans.sent);
    hidden.recv.push(...found.spans.recv);
    values.push(...found.values);
    parts.push(...found.parts);
    return spansOf(found.spans);
  };

  patterns.forEach((pattern, index) => {
    if (pattern.kind === "reveal") return;
    const spans = hide(pattern);
    declared.push({ pattern: publicPattern(pattern), spans, matched: spans.length > 0 });
    if (spans.length === 0) unmatched.push(index + 1);
  });
  for (const pattern of defaultPatterns(patterns, parsed)) {
    const spans = hide(pattern);
    if (spans.length > 0) declared.push({ pattern: DEFAULT_PREFIX + publicPattern(pattern), spans, matched: true });
  }
  const byPatterns = { sent: mergeRanges(hidden.sent), recv: mergeRanges(hidden.recv) };
  const echoed = echoes(parsed, needles(values, parts), byPatterns);
  const echoSpans = spansOf(echoed);
  if (echoSpans.length > 0) declared.push({ pattern: ECHO_PATTERN, spans: echoSpans, matched: true });
  return {
    hidden: { sent: mergeRanges([...byPatterns.sent, ...echoed.sent]), recv: mergeRanges([...byPatterns.recv, ...echoed.recv]) },
    declared,
    unmatched,
  };
}

/** What to reveal of a direction of `length` bytes: everything outside `hidden`, sorted and merged. */
export function revealedRanges(length: number, hidden: readonly ByteRange[]): ByteRange[] {
  return complementRanges(length, hidden);
}
