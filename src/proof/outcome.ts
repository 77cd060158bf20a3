import type { ErrorCode } from "../core/errors.ts";
import type { Proof } from "./format.ts";

/** How one request id ended: the signed proof, or why no proof will come. */
export type ProofOutcome =
  | { event: "proof"; proof: Proof }
  | { event: "error"; requestId: string; code: ErrorCode; message: string };
