/**
 * Redaction: which transcript bytes the prover keeps hidden, from the client's `T-REDACTED` patterns.
 * Patterns apply in order, each on the view the earlier ones left (see find.ts for what "find" means);
 * the union of all their spans is hidden, whatever the order or overlap.
 */
import type { ByteRange, DeclaredRedaction, RedactionSpan } from "../proof/format.ts";
import { findSpans, parseTranscript } from "./find.ts";
import { type RedactionPattern, publicPattern } from "./patterns.ts";
import { complementRanges, mergeRanges, type RangesByDirection } from "./spans.ts";

export { parseRedactions, publicPattern, type RedactionPattern } from "./patterns.ts";

export interface RedactionResult {
  /** Union of all spans per direction, sorted and merged. */
  hidden: { sent: ByteRange[]; recv: ByteRange[] };
  /** One per pattern, in the order given. `matched` is true exactly when the pattern has spans. */
  declared: DeclaredRedaction[];
}

export function computeRedactions(
  transcript: { sent: Uint8Array; recv: Uint8Array },
  patterns: readonly RedactionPattern[],
): RedactionResult {
  const parsed = parseTranscript(transcript);
  let hidden: RangesByDirection = { sent: [], recv: [] };
  const declared: DeclaredRedaction[] = [];
  for (const pattern of patterns) {
    const found = findSpans(parsed, pattern, hidden);
    hidden = { sent: mergeRanges([...hidden.sent, ...found.sent]), recv: mergeRanges([...hidden.recv, ...found.recv]) };
    const spans: RedactionSpan[] = [
      ...found.sent.map((r) => ({ direction: "sent" as const, ...r })),
      ...found.recv.map((r) => ({ direction: "recv" as const, ...r })),
    ];
    declared.push({ pattern: publicPattern(pattern), spans, matched: spans.length > 0 });
  }
  return { hidden, declared };
}

/** What to reveal of a direction of `length` bytes: everything outside `hidden`, sorted and merged. */
export function revealedRanges(length: number, hidden: readonly ByteRange[]): ByteRange[] {
  return complementRanges(length, hidden);
}
