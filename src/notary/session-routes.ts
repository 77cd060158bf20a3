/** The notary's MPC session routes (src/protocol/notary.ts lists them); the MPC WebSocket is in sockets.ts. */
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import type { Logger } from "../log.ts";
import type { NotaryMetrics } from "../metrics/notary.ts";
import { withEvmAttestation } from "../proof/evm-attestation.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { signProof } from "../proof/sign.ts";
import { AttestationRequest, type SessionCreated, SessionRequest, type SessionRunning } from "../protocol/notary.ts";
import { type AttestationContext, buildProofBody } from "./attest.ts";
import type { SessionRegistry } from "./sessions.ts";

export interface SessionRouteDeps {
  sessions: SessionRegistry;
  key: NotaryKey;
  context: AttestationContext;
  metrics: NotaryMetrics;
  log: Logger;
}

export function sessionRoutes(deps: SessionRouteDeps) {
  const { sessions, metrics, log } = deps;
  return new Elysia({ name: "notary-sessions" })
    .post("/session", ({ body }): SessionCreated => {
      const sizes = parseInput(SessionRequest, body, "invalid_body", "session request");
      const sessionId = sessions.create(sizes);
      metrics.sessionCreated();
      log.info("session created", { sessionId, maxSentData: sizes.maxSentData, maxRecvData: sizes.maxRecvData });
      return { sessionId };
    })
    .get("/session/:id", ({ params }): SessionRunning => {
      // Lets a prover check a warm session before using it; the id is the capability.
      const traffic = sessions.traffic(params.id);
      if (!traffic) throw new AppError("not_found", "unknown or finished session");
      return { sessionId: params.id, state: "running", traffic };
    })
    .delete("/session/:id", ({ params }) => {
      // The session id is the capability: only the prover that opened it knows it.
      sessions.release(params.id);
      return new Response(null, { status: 204 });
    })
    .post("/session/:id/attestation", async ({ body, params }) => {
      try {
        const declared = parseInput(AttestationRequest, body, "invalid_body", "attestation request");
        const output = await sessions.takeVerified(params.id);
        const proof = metrics.timeSigning(() => {
          const proofBody = buildProofBody(output, declared, deps.context);
          // The EVM attestation goes inside the body, so the tlsproof/1 signature covers it too.
          return signProof(withEvmAttestation(proofBody, deps.key), deps.key);
        });
        metrics.attestation("signed");
        log.info("proof signed", { sessionId: params.id, requestId: declared.requestId });
        return proof;
      } catch (error) {
        metrics.attestation(error instanceof AppError ? error.code : "internal");
        throw error;
      }
    });
}
