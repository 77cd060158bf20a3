/** Whether and how an exchange is proven, whatever the mode: the client's redaction and failure choices applied to what was exchanged. */
import { AppError } from "../../core/errors.ts";
import type { ExchangedBytes } from "../../core/exchange.ts";
import { type RedactionPattern, type RedactionResult, computeRedactions } from "../../redaction/index.ts";

/** What decides whether and how an exchange is proven. */
export interface ProofChoices {
  patterns: readonly RedactionPattern[];
  /** A proof may list patterns that matched nothing (`T-REDACTED-UNMATCHED: allow`). */
  allowUnmatched: boolean;
  /** Answers with status ≥ 400 are proven too (`T-PROVE-FAILED-REQ`). */
  proveFailed: boolean;
}

/** The redaction a proof of this exchange will use, or why no proof is made. */
export function planProof(choices: ProofChoices, exchange: ExchangedBytes & { answer: { status: number } }): { redaction: RedactionResult } | { refusal: AppError } {
  const status = exchange.answer.status;
  if (status >= 400 && !choices.proveFailed) {
    return { refusal: new AppError("target_request_failed", `the target answered ${status}; no proof is made without T-PROVE-FAILED-REQ: true`) };
  }
  const redaction = computeRedactions({ sent: exchange.sent, recv: exchange.recv }, choices.patterns);
  const { unmatched } = redaction;
  if (unmatched.length > 0 && !choices.allowUnmatched) {
    // Entries are named by position only: a pattern's text may be the secret itself.
    const entries = unmatched.length === 1 ? `T-REDACTED entry ${unmatched[0]}` : `T-REDACTED entries ${unmatched.join(", ")}`;
    return { refusal: new AppError("redaction_unmatched", `${entries} matched nothing; no proof is made (T-REDACTED-UNMATCHED: allow proves anyway)`) };
  }
  return { redaction };
}
