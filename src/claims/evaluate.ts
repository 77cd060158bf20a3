/**
 * The notary's judgement of the claims a prover asked for, on the answer as the notary saw it (subject.ts), never on
 * what the prover says of it. A value claim states a value the proof shows; a predicate or a commitment may speak
 * of a value the proof hides, when the notary saw it (proxy mode).
 */
import { bytesToHex } from "@noble/hashes/utils.js";
import { keccak256 } from "../core/keccak/index.ts";
import type { Claim } from "./claim.ts";
import { compareDecimals } from "./decimal.ts";
import { type ClaimRequest, type Comparison, type Literal, literalText } from "./grammar.ts";
import { claimRefused, locateSubject, type SeenAnswer, type SubjectValue } from "./subject.ts";
import type { ByteRange } from "../core/transcript.ts";

export interface ClaimContext {
  answer: SeenAnswer;
  /** Whether the proof shows these bytes of the answer (seen, and not declared hidden). */
  shown: (range: ByteRange) => boolean;
  /** T-CLAIM-SALT's bytes; commitments need it. */
  salt?: Uint8Array;
}

const holds = (op: Comparison, order: number): boolean =>
  ({ "==": order === 0, "!=": order !== 0, ">": order > 0, ">=": order >= 0, "<": order < 0, "<=": order <= 0 })[op];

/** The order of the subject's value against the operand, or the reason they do not compare. */
function orderOf(value: SubjectValue, operand: Literal): number | string {
  switch (operand.type) {
    case "null":
      return value.type === "null" ? 0 : 1;
    case "boolean":
      return value.type === "boolean" ? Number(value.value !== operand.value) : `the value is ${article(value)}, not a boolean`;
    case "string":
      return value.type === "string" ? Number(value.value !== operand.value) : `the value is ${article(value)}, not a string`;
    case "number": {
      // A header's value is text: it compares as a number when it is written as one; a JSON string never does.
      const text = value.type === "number" ? value.text : value.type === "string" ? value.numeric : undefined;
      return text === undefined ? `the value is ${article(value)}, not a number` : compareDecimals(text, operand.text);
    }
  }
}

const article = (value: SubjectValue) => (value.type === "object" || value.type === "array" ? `an ${value.type}` : `a ${value.type}`);

function evaluate(request: ClaimRequest, position: number, context: ClaimContext): Claim {
  const { value, ranges } = locateSubject(request, position, context.answer);
  const subject = request.subjectText;
  switch (request.kind) {
    case "value":
      if (!ranges.every(context.shown)) throw claimRefused(request, position, "the proof hides this value: claim a comparison or commit: instead");
      return { kind: "value", subject, value: value.json };
    case "predicate": {
      const order = orderOf(value, request.operand);
      if (typeof order === "string") throw claimRefused(request, position, order);
      return { kind: "predicate", subject, op: request.op, operand: literalText(request.operand), holds: holds(request.op, order) };
    }
    case "commitment": {
      if (!context.salt) throw claimRefused(request, position, "commit: needs T-CLAIM-SALT");
      return { kind: "commitment", subject, commitment: `0x${bytesToHex(commitmentOf(context.salt, value.json))}` };
    }
  }
}

/** keccak256(salt ‖ UTF-8 of the value's JSON text): what a commitment claim states. */
function commitmentOf(salt: Uint8Array, valueJson: string): Uint8Array {
  return keccak256(salt, valueJson);
}

/** Every claim judged, in the order asked; the first that cannot be judged refuses them all. */
export function evaluateClaims(requests: readonly ClaimRequest[], context: ClaimContext): Claim[] {
  return requests.map((request, index) => evaluate(request, index + 1, context));
}
