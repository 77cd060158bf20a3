/**
 * The one attestation path, for both modes' routes: the mode verifies the exchange its own way (mpc-transcript.ts,
 * proxy-transcript.ts), then the same body builder (attest.ts), the same signatures (tlsproof/1 and the EVM
 * attestation inside the body), the same metrics and log.
 */
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { NotaryMetrics } from "../metrics/notary.ts";
import { withEvmAttestation } from "../proof/evm-attestation.ts";
import type { Proof } from "../proof/format.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { signProof } from "../proof/sign.ts";
import type { AttestationRequest } from "../protocol/notary.ts";
import { type AttestationContext, buildProofBody } from "./attest.ts";
import type { VerifiedTranscript } from "./verified-transcript.ts";

export interface AttestationDeps {
  key: NotaryKey;
  context: AttestationContext;
  metrics: NotaryMetrics;
  log: Logger;
}

/**
 * Reads the prover's request with `parse`, verifies the session's exchange with `verify`, then builds and signs its
 * proof; every refusal is counted by its code.
 */
export async function attest<Declared extends AttestationRequest>(
  deps: AttestationDeps,
  sessionId: string,
  parse: () => Promise<Declared>,
  verify: (declared: Declared) => Promise<VerifiedTranscript>,
): Promise<Proof> {
  try {
    const declared = await parse();
    const transcript = await verify(declared);
    // The EVM attestation goes inside the body, so the tlsproof/1 signature covers it too.
    const proof = deps.metrics.timeSigning(() => signProof(withEvmAttestation(buildProofBody(transcript, declared, deps.context), deps.key), deps.key));
    deps.metrics.attestation("signed");
    deps.log.info("proof signed", { sessionId, requestId: declared.requestId, mode: transcript.mode });
    return proof;
  } catch (error) {
    deps.metrics.attestation(error instanceof AppError ? error.code : "internal");
    throw error;
  }
}
