/**
 * The one attestation path, for every mode: the mode reads its attestation request and verifies the exchange its own
 * way (NotaryMode.verify: mpc/transcript.ts, proxy-mode/transcript.ts), then the same body builder (attest.ts), the
 * same signatures (the proof version's and the EVM attestation inside the body), the same metrics and log.
 */
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import type { Logger } from "../log.ts";
import type { NotaryMetrics } from "../metrics/notary.ts";
import { withEvmAttestation } from "../proof/evm-attestation.ts";
import type { Proof } from "../proof/format.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { signProof } from "../proof/sign.ts";
import { type AttestationContext, buildProofBody } from "./attest.ts";
import type { NotaryMode } from "./modes.ts";

export interface AttestationDeps {
  key: NotaryKey;
  context: AttestationContext;
  metrics: NotaryMetrics;
  log: Logger;
}

/** Reads the prover's attestation request, has the mode verify the session's exchange, then builds and signs its proof; every refusal is counted by its code. */
export async function attest(deps: AttestationDeps, mode: NotaryMode, sessionId: string, body: unknown): Promise<Proof> {
  const askedAt = Date.now();
  try {
    const declared = parseInput(mode.attestationRequest, body, "invalid_body", "attestation request");
    const transcript = await mode.verify(sessionId, declared, askedAt);
    // The EVM attestation goes inside the body, so the proof's own signature covers it too.
    const proof = deps.metrics.timeSigning(() => signProof(withEvmAttestation(buildProofBody(transcript, declared, deps.context), deps.key), deps.key));
    deps.metrics.attestation("signed");
    deps.log.info("proof signed", { sessionId, requestId: declared.requestId, mode: transcript.mode });
    return proof;
  } catch (error) {
    deps.metrics.attestation(error instanceof AppError ? error.code : "internal");
    throw error;
  }
}
