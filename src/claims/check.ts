/**
 * A verifier's check of a signed proof's claims: each is in normal form, and each that can be judged again on the
 * bytes the proof reveals says what those bytes say. A notary that signed a value or a result its own transcript
 * contradicts made an invalid proof. Claims over hidden values cannot be judged again: the signature is their
 * only evidence, which is what a claim is for.
 */
import type { ByteRange } from "../core/transcript.ts";
import { type Claim, claimLine } from "./claim.ts";
import { literalText, parseClaim } from "./grammar.ts";
import { evaluateClaims } from "./evaluate.ts";
import { AppError } from "../core/errors.ts";

export interface RevealedAnswer {
  /** The answer's bytes, hidden ones zero. */
  bytes: Uint8Array;
  /** The ranges the proof reveals, sorted. */
  revealed: readonly ByteRange[];
}

/** The claim as asked, read back from what the proof states; null when it is not in normal form. */
function askedClaim(claim: Claim): string | null {
  const asked = claim.kind === "value" ? claim.subject : claim.kind === "commitment" ? `commit:${claim.subject}` : `${claim.subject}${claim.op}${claim.operand}`;
  try {
    const request = parseClaim(asked, 1);
    if (request.subjectText !== claim.subject) return null;
    if (claim.kind === "predicate" && (request.kind !== "predicate" || literalText(request.operand) !== claim.operand)) return null;
    return asked;
  } catch {
    return null;
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Why the proof's claims cannot stand, or null. */
export function claimsProblem(claims: readonly Claim[], answer: RevealedAnswer): string | null {
  const seen = new Uint8Array(answer.bytes.length);
  for (const range of answer.revealed) seen.fill(1, range.start, range.end);
  // Judged on what the proof reveals, a value is judged only when seen whole (subject.ts): shown, then.
  const shown = () => true;
  for (const [index, claim] of claims.entries()) {
    const where = `body.claims[${index}]`;
    const asked = askedClaim(claim);
    if (asked === null) return `${where}: not a claim in normal form`;
    if (claim.kind === "value" && !isJson(claim.value)) return `${where}.value is not JSON`;
    if (claim.kind === "commitment") continue;
    let judged: Claim;
    try {
      [judged] = evaluateClaims([parseClaim(asked, index + 1)], { answer: { bytes: answer.bytes, seen }, shown }) as [Claim];
    } catch (error) {
      // Not judged again on what the proof shows (the value is hidden): the notary's signature stands for it.
      if (error instanceof AppError && error.code === "claim_unsupported") continue;
      throw error;
    }
    // Same subject, kind, comparison and operand (normal form): the lines differ only where the value or result does.
    if (claimLine(judged) !== claimLine(claim)) return `${where} states what the proof's own answer contradicts (${claim.subject})`;
  }
  return null;
}
