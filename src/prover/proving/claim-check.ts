/**
 * The prover's check of a call's claims before anything is sent, on what the client asked (its T-REDACTED patterns
 * and the proof mode): a claim that could only be refused by the notary later is refused now, as a 400 naming it:
 * a value the proof would hide, a commitment without a salt, any claim in a mode whose notary sees only what the
 * proof reveals when the client hides part of the answer.
 * The notary judges again on the answer itself (evaluate.ts): this check spares the client a session, it protects
 * nobody.
 */
import type { ModeFacts } from "../../proof/modes.ts";
import { DEFAULT_HIDDEN, type RedactionPattern } from "../../redaction/patterns.ts";
import { type ClaimRequest, type ClaimSubject, claimError } from "../../claims/grammar.ts";

export interface ClaimChoices {
  claims: readonly ClaimRequest[];
  patterns: readonly RedactionPattern[];
  claimSalt?: string;
}

const isPrefix = (short: readonly string[], long: readonly string[]) => short.every((segment, i) => long[i] === segment);

/** Where the patterns hide some of the subject's value: the entry's position, or "by default"; undefined when nowhere. */
function hiddenBy(subject: ClaimSubject, patterns: readonly RedactionPattern[]): string | undefined {
  const at = patterns.findIndex((pattern) => {
    if (subject.kind === "res:body" && pattern.kind === "res:body") return isPrefix(pattern.path, subject.path) || isPrefix(subject.path, pattern.path);
    return subject.kind === "res:header" && pattern.kind === "res:header" && pattern.name.toLowerCase() === subject.name;
  });
  if (at >= 0) return `T-REDACTED entry ${at + 1}`;
  if (subject.kind !== "res:header") return undefined;
  const byDefault = DEFAULT_HIDDEN.some((d) => d.kind === "res:header" && d.name === subject.name);
  const revealed = patterns.some((p) => p.kind === "reveal" && p.header.kind === "res:header" && p.header.name === subject.name);
  return byDefault && !revealed ? `by default; reveal:res:header:${subject.name} shows it` : undefined;
}

/** The first entry that hides bytes of the answer, as its position; -1 when none does. */
const answerHiding = (patterns: readonly RedactionPattern[]) => patterns.findIndex((p) => p.kind === "res:body" || p.kind === "res:header" || p.kind === "search");

/** Throws invalid_claim (400) for the first claim the mode's notary would have to refuse whatever the answer. */
export function checkClaims({ claims, patterns, claimSalt }: ClaimChoices, mode: ModeFacts): void {
  const hiding = answerHiding(patterns);
  // A notary that sees only what the proof reveals judges claims on an answer revealed whole (subject.ts).
  if (claims.length > 0 && !mode.notarySeesAnswer && hiding >= 0) {
    throw claimError(1, `T-REDACTED entry ${hiding + 1} hides part of the answer, and a ${mode.name} notary judges claims only on an answer the proof reveals whole: use T-PROOF-MODE: proxy`);
  }
  claims.forEach((claim, index) => {
    const position = index + 1;
    if (claim.kind === "commitment" && claimSalt === undefined) throw claimError(position, "commit: needs T-CLAIM-SALT (0x and 64 hex digits, kept by the client)");
    const hidden = hiddenBy(claim.subject, patterns);
    if (hidden === undefined) return;
    if (claim.kind === "value") throw claimError(position, `states the value of ${claim.subjectText}, which the proof hides (${hidden}): claim a comparison or commit: instead`);
  });
}
