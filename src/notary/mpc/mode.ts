/** MPC mode as a notary offers it (../modes.ts): sessions of the prover's sizes, its MPC socket, its Verifier's output. */
import type { SessionLimits } from "../../protocol/limits.ts";
import { BUILT_IN_MODES } from "../../proof/modes.ts";
import { type SessionRequest, SessionRequest as SessionRequestSchema } from "../../protocol/mpc.ts";
import { AttestationRequest } from "../../protocol/notary.ts";
import { maxJsonBodyBytes } from "../limits.ts";
import type { NotaryMode, NotaryModeBackend } from "../modes.ts";
import type { SessionRegistry } from "./sessions.ts";
import { mpcTranscript } from "./transcript.ts";

/** MPC's backend: made, as every mode is, when the notary starts; its sessions are the notary's MPC registry. */
export const mpcNotaryBackend = (sessions: SessionRegistry, limits: SessionLimits): NotaryModeBackend => ({
  facts: BUILT_IN_MODES.mpc,
  create: () => mpcNotaryMode(sessions, limits),
});

function mpcNotaryMode(sessions: SessionRegistry, limits: SessionLimits): NotaryMode<AttestationRequest, SessionRequest> {
  return {
    facts: BUILT_IN_MODES.mpc,
    opens: "open an MPC session; its prover then connects the MPC WebSocket (GET /notarize?sessionId=)",
    sessionRequest: { schema: SessionRequestSchema, where: "session request", errors: ["session_too_large", "over_capacity"] },
    open: (sizes) => ({ sessionId: sessions.create(sizes), logFields: { maxSentData: sizes.maxSentData, maxRecvData: sizes.maxRecvData } }),
    release: (sessionId) => sessions.release(sessionId),
    // Lets a prover check a warm session before using it, and watch its setup; the id is the capability.
    running: (sessionId) => sessions.traffic(sessionId),
    attestationRequest: { schema: AttestationRequest, where: "attestation request", errors: [] },
    verify: async (sessionId) => mpcTranscript(await sessions.takeVerified(sessionId), limits.maxSentData),
    socket: {
      accepts: (sessionId) => sessions.has(sessionId),
      open: (socket) => sessions.attach(socket),
      message: (socket, bytes) => sessions.forward(socket, bytes),
      close: (socket, code) => sessions.detach(socket, code),
    },
    maxBodyBytes: maxJsonBodyBytes(limits),
    active: () => sessions.active(),
    closeAll: (reason) => sessions.closeAll(reason),
  };
}
