/**
 * What a verifier may require of a proof's claims (`cli verify --expect-claim`, verifyProof's `claims`): each
 * expected claim, written as in `T-CLAIM`, must be stated by the proof: a comparison as holding (its operand equal,
 * numbers compared exactly), a value or a commitment as stated for that subject.
 */
import type { Claim } from "./claim.ts";
import { compareDecimals } from "./decimal.ts";
import { type ClaimRequest, claimText, JSON_NUMBER, literalText, parseClaims } from "./grammar.ts";

const sameOperand = (stated: string, expected: string): boolean =>
  JSON_NUMBER.test(stated) && JSON_NUMBER.test(expected) ? compareDecimals(stated, expected) === 0 : stated === expected;

/** Whether `claim` answers the claim asked (`holding`: a comparison must also hold). */
function states(claim: Claim, expected: ClaimRequest, holding = true): boolean {
  if (claim.subject !== expected.subjectText || claim.kind !== expected.kind) return false;
  if (claim.kind !== "predicate" || expected.kind !== "predicate") return true;
  return claim.op === expected.op && sameOperand(claim.operand, literalText(expected.operand)) && (claim.holds || !holding);
}

/** The first claim asked that the proof does not answer (holding or not), as a `T-CLAIM` entry; null when none. */
export function unansweredClaim(claims: readonly Claim[], asked: readonly ClaimRequest[]): string | null {
  const missing = asked.find((wanted) => !claims.some((claim) => states(claim, wanted, false)));
  return missing === undefined ? null : claimText(missing);
}

/** The first expected claim the proof does not state (as holding), in words; null when it states them all. */
export function claimsMismatch(claims: readonly Claim[], expected: readonly string[]): string | null {
  for (const text of expected) {
    for (const wanted of parseClaims(text)) {
      if (claims.some((claim) => states(claim, wanted))) continue;
      const judged = claims.find(
        (claim) =>
          claim.kind === "predicate" && wanted.kind === "predicate" && claim.subject === wanted.subjectText && claim.op === wanted.op && sameOperand(claim.operand, literalText(wanted.operand)),
      );
      return judged ? `the proof states that ${text.trim()} does not hold` : `the proof states no claim ${text.trim()}`;
    }
  }
  return null;
}
