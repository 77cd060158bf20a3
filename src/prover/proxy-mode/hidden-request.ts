/**
 * Proxy mode with the request hidden whole (`T-PROXY-REVEAL: none`, or a TLS 1.2 target without `request`): the
 * notary never sees the request, so a proof can name no part of it. With `none`, patterns aimed at the request are
 * refused up front; the default-hidden credentials and the echo guard still run on the whole transcript, and only
 * what they hide in the answer is declared.
 */
import { AppError } from "../../core/errors.ts";
import type { DeclaredRedaction } from "../../proof/format.ts";
import type { RedactionPattern } from "../../redaction/index.ts";

/** Patterns that locate bytes of the request (its headers, body, query or path). */
const REQUEST_KINDS = new Set<RedactionPattern["kind"]>(["req:header", "req:body", "res:query", "res:path"]);

/** Throws a 400 when a pattern names the request, which stays hidden whole. */
export function refuseRequestPatterns(patterns: readonly RedactionPattern[]): void {
  const position = patterns.findIndex((pattern) => REQUEST_KINDS.has(pattern.kind));
  if (position < 0) return;
  throw new AppError(
    "invalid_redaction",
    `T-REDACTED entry ${position + 1} names the request, but with T-PROXY-REVEAL: none the request is hidden whole from the notary and the proof; leave T-PROXY-REVEAL out to prove it with its secrets kept from the notary (TLS 1.3), or send request`,
    { entry: position + 1 },
  );
}

/** The declared redactions with the request's spans left out (it is hidden whole); entries left empty by it are dropped. */
export function declaredForHiddenRequest(declared: readonly DeclaredRedaction[]): DeclaredRedaction[] {
  return declared
    .map((entry) => {
      const spans = entry.spans.filter((span) => span.direction === "recv");
      return { ...entry, spans, matched: spans.length > 0 };
    })
    .filter((entry, i) => entry.matched || !declared[i]!.matched);
}
