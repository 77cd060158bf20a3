/**
 * The body a notary signs for a proxy session: the response as the notary itself decrypted it from the bytes
 * it relayed, less what the prover declared hidden; the request only when its keys were revealed, else its
 * length alone. The same rules as MPC proofs (src/proof/check.ts) hold before anything is signed.
 */
import { AppError } from "../errors.ts";
import { proofBodyProblem } from "../proof/check.ts";
import type { ProofBody } from "../proof/format.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";
import type { ProxyAttestationRequest } from "../protocol/notary.ts";
import { complementRanges } from "../core/ranges.ts";
import type { VerifiedSession } from "../tls/verify-session.ts";
import { type AttestationContext, transcriptDirection } from "./attest.ts";

function hiddenSpans(request: ProxyAttestationRequest, direction: Direction): ByteRange[] {
  return request.redactions.flatMap((entry) => entry.spans.filter((span) => span.direction === direction));
}

function sentDirection(verified: VerifiedSession, request: ProxyAttestationRequest) {
  if (!request.revealRequest) {
    if (hiddenSpans(request, "sent").length > 0) {
      throw new AppError("invalid_body", "declared redactions refused: the request is hidden whole, so no span may name it");
    }
    return { length: verified.sentLength, revealed: [] };
  }
  if (!verified.sent) throw new AppError("session_failed", "the request was to be revealed, but its keys were not");
  const sent = verified.sent;
  return transcriptDirection(sent, complementRanges(sent.length, hiddenSpans(request, "sent")), sent.length);
}

export function buildProxyProofBody(verified: VerifiedSession, request: ProxyAttestationRequest, context: AttestationContext): ProofBody {
  const { recv } = verified;
  const transcript = {
    sent: sentDirection(verified, request),
    recv: transcriptDirection(recv, complementRanges(recv.length, hiddenSpans(request, "recv")), recv.length),
  };
  const problem = proofBodyProblem({ transcript, redactions: request.redactions });
  if (problem) throw new AppError("invalid_body", `declared redactions refused: ${problem}`);
  return {
    requestId: request.requestId,
    notary: { publicKey: context.publicKeyPem, algorithm: context.algorithm },
    mode: "proxy",
    serverName: verified.serverName,
    connectionTime: verified.connectionTime,
    tlsVersion: verified.tlsVersion,
    notarizedAt: Date.now(),
    transcript,
    redactions: request.redactions,
    testTrustAnchor: context.testTrustAnchor,
    notaryVersion: context.notaryVersion,
  };
}
