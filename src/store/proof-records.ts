/**
 * Request ids and their outcomes, kept in the message store's database: a request id is single use for
 * ever (across restarts, and across every prover sharing a PostgreSQL database), and every outcome stays
 * reachable by its id. A proof is a message of the proofs stream; the record points at it by its key.
 */
import type { ErrorCode } from "../errors.ts";
import type { Proof } from "../proof/format.ts";
import type { ProofOutcome } from "../proof/outcome.ts";

export type RecordedOutcome =
  | { state: "unknown" }
  | { state: "pending"; claimedAt: number }
  | { state: "settled"; outcome: ProofOutcome };

export interface ProofRecords {
  /** Marks the id used; false when it was used before (by this or any process sharing the database). */
  claim(requestId: string): Promise<boolean>;
  /**
   * Publishes the proof to the proofs stream (node-signed) and records it as the id's outcome, in one
   * transaction. Throws AppError `storage_failed` when it could not be stored.
   */
  saveProof(requestId: string, proof: Proof): Promise<void>;
  /** Records that no proof will come for this id. The first recorded outcome wins. */
  saveFailure(requestId: string, failure: { code: ErrorCode; message: string }): Promise<void>;
  /** The id's state, read by primary key (no scan). */
  lookup(requestId: string): Promise<RecordedOutcome>;
  /** Settles every id still pending with this failure (a restarted single prover: those sessions died with it). Returns how many. */
  failPending(failure: { code: ErrorCode; message: string }): Promise<number>;
}
