/**
 * Proxy mode as a notary offers it (../modes.ts): a session is a relay to a target the notary dialled itself, its
 * socket that relay, and its transcript the relayed bytes decrypted with the keys the prover reveals.
 */
import type { ProxyLimits, SessionLimits } from "../../protocol/limits.ts";
import { BUILT_IN_MODES } from "../../proof/modes.ts";
import { ProxyAttestationRequest, ProxySessionRequest } from "../../protocol/proxy-mode.ts";
import { PROXY_ATTESTATION_MAX_BYTES } from "../limits.ts";
import type { NotaryMode, NotaryModeBackend } from "../modes.ts";
import type { ProxyRefusal } from "./places.ts";
import { type ProxySessionRegistry, ProxySessions } from "./sessions.ts";
import { type ProxyVerification, proxyTranscript } from "./transcript.ts";

/** Proxy mode as a notary offers it: its limits and policy, and the roots a target's chain must lead to. */
export interface ProxyModeOptions extends ProxyLimits, ProxyVerification {}

/**
 * Proxy mode's backend: made, as every mode is, when the notary starts; its relays are held to the notary's session
 * limits and its own, each refusal counted.
 */
export const proxyNotaryBackend = (limits: SessionLimits, options: ProxyModeOptions, countRefusal: (reason: ProxyRefusal) => void): NotaryModeBackend => ({
  facts: BUILT_IN_MODES.proxy,
  create: ({ log }) => proxyNotaryMode(new ProxySessions(limits, options, log, countRefusal), options),
});

function proxyNotaryMode(sessions: ProxySessionRegistry, options: ProxyModeOptions): NotaryMode<ProxyAttestationRequest, ProxySessionRequest> {
  return {
    facts: BUILT_IN_MODES.proxy,
    opens: "open a proxy-mode session: the notary connects to the target; its prover then relays through GET /relay?sessionId=",
    sessionRequest: {
      schema: ProxySessionRequest,
      where: "proxy session request",
      errors: ["over_capacity", "target_forbidden", "target_unresolvable", "target_unreachable", "target_timeout"],
    },
    async open(request) {
      return { sessionId: await sessions.create(request), logFields: { serverName: request.serverName, port: request.port } };
    },
    release: (sessionId) => sessions.release(sessionId),
    attestationRequest: { schema: ProxyAttestationRequest, where: "proxy attestation request", errors: ["transcript_invalid", "attestation_late", "tls_untrusted"] },
    verify: async (sessionId, { keys }, askedAt) => proxyTranscript(await sessions.takeRelayed(sessionId), keys, options, askedAt),
    socket: {
      accepts: (sessionId) => sessions.has(sessionId),
      open: (socket) => sessions.attach(socket),
      message: (socket, bytes) => sessions.forward(socket, bytes),
      drain: (socket) => sessions.drain(socket),
      close: (socket) => sessions.detach(socket),
    },
    maxBodyBytes: PROXY_ATTESTATION_MAX_BYTES,
    active: () => sessions.active(),
    closeAll: () => sessions.closeAll(),
  };
}
