import type { ErrorCode } from "../core/errors.ts";
import type { DeliveredProof } from "./quorum.ts";

/** How one request id ended: the signed proof (a quorum's, for T-QUORUM), or why no proof will come. */
export type ProofOutcome =
  | { event: "proof"; proof: DeliveredProof }
  | { event: "error"; requestId: string; code: ErrorCode; message: string };
