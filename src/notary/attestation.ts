/**
 * The one attestation path, for every mode: the route reads the mode's attestation request (its declaration's
 * schema, session-routes.ts), the mode verifies the exchange its own way (NotaryMode.verify: mpc/transcript.ts,
 * proxy-mode/transcript.ts), then the same body builder (attest.ts), the same signatures (the proof version's and
 * the EVM attestation inside the body), the same ledger (one statement per request id, ledger.ts), the same metrics
 * and log.
 */
import { AppError } from "../core/errors.ts";
import type { Logger } from "../base/log.ts";
import type { NotaryMetrics } from "../metrics/notary.ts";
import { withEvmAttestation } from "../proof/evm-attestation.ts";
import type { Proof } from "../proof/format.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { signProof } from "../proof/sign.ts";
import type { AttestationRequest } from "../protocol/notary.ts";
import { type AttestationContext, buildProofBody } from "./attest.ts";
import type { AttestationLedger } from "./ledger.ts";
import type { NotaryMode } from "./modes.ts";

export interface AttestationDeps {
  key: NotaryKey;
  /** The request ids this notary signed: one statement per id, ever (ledger.ts). */
  ledger: AttestationLedger;
  context: AttestationContext;
  metrics: NotaryMetrics;
  log: Logger;
}

/**
 * Reads the prover's attestation request with `parse` (inside, so that its refusals are counted too), has the mode
 * verify the session's exchange, then builds and signs its proof; every refusal is counted by its code.
 */
export async function attest<Declared extends AttestationRequest>(
  deps: AttestationDeps,
  mode: NotaryMode<Declared>,
  sessionId: string,
  parse: () => Promise<Declared>,
): Promise<Proof> {
  const askedAt = Date.now();
  try {
    const declared = await parse();
    const transcript = await mode.verify(sessionId, declared, askedAt);
    const body = buildProofBody(transcript, declared, deps.context);
    // Spent only now that every check passed: a refused attestation leaves the id free for an honest retry.
    await deps.ledger.record(declared.requestId);
    // The EVM attestation goes inside the body, so the proof's own signature covers it too.
    const proof = deps.metrics.timeSigning(() => signProof(withEvmAttestation(body, deps.key), deps.key));
    deps.metrics.attestation("signed");
    deps.log.info("proof signed", { sessionId, requestId: declared.requestId, mode: transcript.mode });
    return proof;
  } catch (error) {
    deps.metrics.attestation(error instanceof AppError ? error.code : "internal");
    throw error;
  }
}
