import type { VerifierOutput } from "tlsn-wasm";
import { AppError } from "../errors.ts";
import { proofBodyProblem, requestHostProblem } from "../proof/check.ts";
import type { ProofBody, RevealedRange, TranscriptDirection } from "../proof/format.ts";
import type { ByteRange } from "../core/transcript.ts";
import type { AttestationRequest } from "../protocol/notary.ts";

export interface AttestationContext {
  publicKeyPem: string;
  algorithm: ProofBody["notary"]["algorithm"];
  testTrustAnchor: boolean;
  notaryVersion: string;
  /** The notary is a prover's embedded one: run by the same operator as the prover, which the proof says. */
  embedded: boolean;
}

/** A transcript direction revealing `authed` of `bytes` (`length` long), ranges merged as the format wants. */
export function transcriptDirection(bytes: number[] | Uint8Array, authed: readonly ByteRange[], length: number): TranscriptDirection {
  const sorted = [...authed].sort((a, b) => a.start - b.start);
  const revealed: RevealedRange[] = [];
  for (const range of sorted) {
    const last = revealed.at(-1);
    // The engine may report touching ranges separately; the format wants them merged.
    if (last && range.start <= last.end) {
      if (range.end > last.end) last.end = range.end;
    } else revealed.push({ start: range.start, end: range.end, data: "" });
  }
  for (const range of revealed) range.data = Buffer.from(bytes.slice(range.start, range.end)).toString("base64");
  return { length, revealed };
}

/**
 * Builds the body the notary signs from what its Verifier verified, plus what the prover declared.
 * Only verified bytes enter the proof; a redaction list that breaks the proof rules of src/proof/check.ts
 * (a declared hidden span that was in fact revealed, a span beyond the transcript, "matched" without spans)
 * is refused, so the notary never signs what a verifier rejects. So is a request that hides its Host or request
 * line, or names another host than the one verified (check.ts, requestHostProblem).
 */
export function buildProofBody(output: VerifierOutput, declared: AttestationRequest, context: AttestationContext): ProofBody {
  if (!output.server_name) throw new AppError("session_failed", "the prover did not reveal the server identity");
  if (!output.transcript) throw new AppError("session_failed", "the prover revealed no transcript");
  const { sent, recv } = output.connection_info.transcript_length;
  const transcript = {
    sent: transcriptDirection(output.transcript.sent, output.transcript.sent_authed, sent),
    recv: transcriptDirection(output.transcript.recv, output.transcript.recv_authed, recv),
  };
  // The rules `cli verify` applies: a body breaking one is never signed.
  const problem = proofBodyProblem({ transcript, redactions: declared.redactions });
  if (problem) throw new AppError("invalid_body", `declared redactions refused: ${problem}`);
  // The revealed request must name the server the certificate proved: not hidden, not another host.
  const hostProblem = requestHostProblem(transcript.sent, output.server_name);
  if (hostProblem) throw new AppError("invalid_body", `request refused: ${hostProblem}`);
  return {
    requestId: declared.requestId,
    notary: { publicKey: context.publicKeyPem, algorithm: context.algorithm, embedded: context.embedded },
    serverName: output.server_name,
    connectionTime: output.connection_info.time,
    tlsVersion: output.connection_info.version === "V1_3" ? "TLS1.3" : "TLS1.2",
    notarizedAt: Date.now(),
    transcript,
    redactions: declared.redactions,
    testTrustAnchor: context.testTrustAnchor,
    notaryVersion: context.notaryVersion,
  };
}
