/**
 * A call proven by a quorum of notaries (`T-QUORUM: M`, docs/notary.md, "Trust"): M runs of the call's mode at once,
 * each through its own notary, which dials the target itself; the client gets the first run's answer, and the
 * proof is one quorum proof (src/proof/quorum.ts) of the M signed proofs, made only when they state the same.
 * What can be refused before anything is sent is refused here, as a 400 naming what to change.
 */
import { AppError } from "../../core/errors.ts";
import type { ExchangeRequest } from "../../core/exchange.ts";
import type { Proof } from "../../proof/format.ts";
import { type DeliveredProof, quorumProofOf } from "../../proof/quorum.ts";
import type { PreparedCall } from "./mode.ts";
import type { ClaimRequest } from "../../claims/grammar.ts";

/** What of a call decides whether a quorum can prove it. */
export interface QuorumChoices {
  quorum: number;
  claims: readonly ClaimRequest[];
  exchange: Pick<ExchangeRequest, "method">;
}

export const refusedQuorum = (reason: string) => new AppError("invalid_header", `T-QUORUM: ${reason}`);

/** Throws invalid_header (400) when a quorum cannot prove this call as asked; nothing was sent yet. */
export function checkQuorum(call: QuorumChoices, prepared: Pick<PreparedCall, "startThrough">, mode: string, notaries: number): void {
  const { quorum } = call;
  if (quorum === 1) return;
  if (quorum > notaries) throw refusedQuorum(`${quorum} distinct notaries asked, and this prover has ${notaries} (PROVER_NOTARY_URL)`);
  if (!prepared.startThrough) throw refusedQuorum(`the ${mode} mode cannot prove through several notaries; use T-PROOF-MODE: proxy`);
  if (call.claims.length === 0) throw refusedQuorum("a quorum agrees on claims only (the sessions' bytes differ): name them in T-CLAIM");
  // Each member's session sends the request to the target: a request with effects would take effect M times.
  if (call.exchange.method !== "GET") throw refusedQuorum(`each notary's session sends the request once, so a quorum proves GET requests only, not ${call.exchange.method}`);
}

/** The call's proof: the one run's, or the quorum proof of all; quorum_disagreement when the runs do not state the same. */
export function provenBy(proofs: readonly Proof[], quorum: number): DeliveredProof {
  if (proofs.length === 1) return proofs[0]!;
  const made = quorumProofOf(proofs, quorum);
  if ("proofs" in made) return made;
  throw new AppError(
    "quorum_disagreement",
    made.claims
      ? `the ${quorum} notaries' sessions do not state the same claims (the answer changed between them): ${made.reason}`
      : `the ${quorum} notaries' proofs are no quorum: ${made.reason}`,
  );
}
