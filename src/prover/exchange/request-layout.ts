/**
 * What the prover may hide of a request so that the proof still shows what the server read, for every mode: the
 * notary's request rule (src/proof/request-rule.ts) proves no revealed byte after a hidden one, so hidden header
 * values end the head as one block, and a body after them, or holding a hidden value, is hidden whole. Each mode lays
 * its request out by these (proxy mode writes hidden headers last; MPC's engine writes headers in its own order, so
 * its block also covers the revealed headers written after the first hidden value), and refuses up front (400,
 * nothing sent) what it could not prove.
 */
import { AppError } from "../../core/errors.ts";
import type { ByteRange } from "../../core/transcript.ts";
import { subtractRanges } from "../../core/ranges.ts";
import { parseHttpMessage } from "../../http1/message.ts";
import type { DeclaredRedaction } from "../../proof/format.ts";
import { type RedactionPattern, computeRedactions, secretQueryNames } from "../../redaction/index.ts";

const latin1 = new TextDecoder("latin1");
const EMPTY = new Uint8Array(0);

/** The request's hidden ranges as its redaction finds them in the request alone, sorted and merged. */
export const hiddenRequestRanges = (request: Uint8Array, patterns: readonly RedactionPattern[]): ByteRange[] =>
  computeRedactions({ sent: request, recv: EMPTY }, patterns).hidden.sent;

/** Where the request's head ends (after its blank line). */
export const headEndOf = (request: Uint8Array): number => parseHttpMessage(request).body[0]?.start ?? request.length;

/** Lower-case names of the header lines a hidden range touches. */
export function hiddenHeaderNames(request: Uint8Array, hidden: readonly ByteRange[]): Set<string> {
  const names = new Set<string>();
  for (const field of parseHttpMessage(request).headers) {
    const line = { start: field.name.start, end: field.value.end };
    if (hidden.some((range) => range.start < line.end && line.start < range.end)) names.add(latin1.decode(request.subarray(field.name.start, field.name.end)).toLowerCase());
  }
  return names;
}

/**
 * Throws invalid_redaction for a body the proof could not show as asked: one that holds a hidden value but is not
 * hidden whole, or that follows a hidden header value. `options` names what else the client may do in its mode.
 */
export function checkProvableBody(request: Uint8Array, hidden: readonly ByteRange[], options: string): void {
  const headEnd = headEndOf(request);
  const head = hidden.filter((range) => range.start < headEnd);
  const body = hidden.filter((range) => range.start >= headEnd);
  const bodyShown = request.length > headEnd && !(body.length === 1 && body[0]!.start === headEnd && body[0]!.end === request.length);
  if (!bodyShown || (head.length === 0 && body.length === 0)) return;
  throw new AppError(
    "invalid_redaction",
    `the request's body cannot be proven as asked: ${body.length > 0 ? "it holds a hidden value" : "it follows a hidden header value"}, and a hidden span may hold anything, the end of the head included, so no byte revealed after one is proven to be what the server read. ${options}`,
  );
}

/**
 * Refuses (400) a request whose URL holds a query parameter hidden by default (its name says it holds a secret:
 * src/redaction/patterns.ts) that the client did not reveal: the proof reveals the request line whole, so the secret
 * would be in it. `hideWhole` names the mode's way to keep the request out of the proof, if it has one.
 */
export function checkSecretQuery(request: Uint8Array, patterns: readonly RedactionPattern[], hideWhole: string): void {
  const revealed = new Set(patterns.flatMap((p) => (p.kind === "reveal" && p.header.kind === "res:query" ? [p.header.name] : [])));
  const names = secretQueryNames(request).filter((name) => !revealed.has(name.toLowerCase()));
  if (names.length === 0) return;
  const [name] = names;
  throw new AppError(
    "invalid_redaction",
    `the URL's query parameter ${names.map((n) => JSON.stringify(n)).join(", ")} looks like a secret (hidden by default), but a proof reveals the request line whole: a hidden byte there may hold the end of the request. Send the secret in a header instead (one named like X-Api-Key is hidden by default), reveal it in the proof on purpose (T-REDACTED: reveal:res:query:${name}), or ${hideWhole}`,
  );
}

/** The label of the bytes a layout hides beyond what the patterns hid (header lines within the hidden block). */
export const HIDDEN_HEADER_BLOCK = "req:hidden-header-block";

/**
 * The redactions a proof declares when its request hides `hidden` (sent): the patterns' own, and one for what the
 * layout hid beside them: a proof accounts for every hidden byte.
 */
export function declareLayout(declared: readonly DeclaredRedaction[], hidden: readonly ByteRange[]): DeclaredRedaction[] {
  const spans = declared.flatMap((entry) => entry.spans.filter((span) => span.direction === "sent"));
  const extra = subtractRanges([...hidden], spans);
  if (extra.length === 0) return [...declared];
  return [...declared, { pattern: HIDDEN_HEADER_BLOCK, matched: true, spans: extra.map((range) => ({ direction: "sent", ...range })) }];
}
