/**
 * A claim as a proof states it, signed with the rest of the body (docs/proof-format.md, "Claims"). What a proof
 * discloses of a value is one of: revealed (its bytes in the transcript), hidden (absent), or, through a claim,
 * stated (`value`), judged (`predicate`: whether a comparison holds, never the value) or committed (`commitment`: a
 * salted hash for later disclosure). A later kind (a ZK proof over hidden bytes) is one more member of this union
 * and of CLAIM_KINDS.
 */
import type { Comparison } from "./grammar.ts";

export type Claim =
  /** The subject's value as JSON text in normal form. */
  | { kind: "value"; subject: string; value: string }
  /** `operand` as JSON text (a number as the client wrote it). */
  | { kind: "predicate"; subject: string; op: Comparison; operand: string; holds: boolean }
  /** keccak256(salt ‖ UTF-8 of the value's JSON text), 0x + 64 hex digits; the salt is in no proof. */
  | { kind: "commitment"; subject: string; commitment: string };

/** Each kind's code in the EVM attestation's Claim struct (evm-attestation.ts); never renumbered. */
export const CLAIM_KINDS: Record<Claim["kind"], number> = { value: 0, predicate: 1, commitment: 2 };

/** The claim as one line a person reads: `res:body:balance > 1000: holds`. */
export function claimLine(claim: Claim): string {
  if (claim.kind === "value") return `${claim.subject} = ${claim.value}`;
  if (claim.kind === "commitment") return `${claim.subject}: committed ${claim.commitment}`;
  return `${claim.subject} ${claim.op} ${claim.operand}: ${claim.holds ? "holds" : "does not hold"}`;
}

/**
 * A claim as a program reads it (`cli verify --json`): a value and an operand parsed from their JSON text (a number
 * beyond 2^53 is rounded there: `valueJson` keeps the exact text), and a line a person reads.
 */
export type ClaimJson = { subject: string; text: string } & (
  | { kind: "value"; value: unknown; valueJson: string }
  | { kind: "predicate"; op: Comparison; operand: unknown; holds: boolean }
  | { kind: "commitment"; commitment: string }
);

export function claimJson(claim: Claim): ClaimJson {
  const text = claimLine(claim);
  if (claim.kind === "value") return { kind: "value", subject: claim.subject, text, value: JSON.parse(claim.value), valueJson: claim.value };
  if (claim.kind === "predicate") return { kind: "predicate", subject: claim.subject, text, op: claim.op, operand: JSON.parse(claim.operand), holds: claim.holds };
  return { kind: "commitment", subject: claim.subject, text, commitment: claim.commitment };
}
