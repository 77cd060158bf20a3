/** The notary's MPC session routes (src/protocol/notary.ts lists them); the MPC WebSocket is in sockets.ts. */
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import { AttestationRequest, type SessionCreated, SessionRequest, type SessionRunning } from "../protocol/notary.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import { mpcTranscript } from "./mpc/transcript.ts";
import type { SessionRegistry } from "./mpc/sessions.ts";

export interface SessionRouteDeps extends AttestationDeps {
  sessions: SessionRegistry;
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
    .post("/session/:id/attestation", ({ body, params }) =>
      attest(
        deps,
        params.id,
        () => parseInput(AttestationRequest, body, "invalid_body", "attestation request"),
        async () => mpcTranscript(await sessions.takeVerified(params.id)),
      ),
    );
}
