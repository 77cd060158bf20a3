/** The notary's proxy-mode routes (src/protocol/notary.ts lists them); the relay WebSocket is in sockets.ts. */
import { Elysia } from "elysia";
import type { ProxyLimits } from "../config/notary.ts";
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import type { Logger } from "../log.ts";
import type { NotaryMetrics } from "../metrics/notary.ts";
import { withEvmAttestation } from "../proof/evm-attestation.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { signProof } from "../proof/sign.ts";
import { ProxyAttestationRequest, ProxySessionRequest, type SessionCreated } from "../protocol/notary.ts";
import { verifyRelayedSession } from "../tls/verify-session.ts";
import type { AttestationContext } from "./attest.ts";
import { buildProxyProofBody } from "./proxy-attest.ts";
import type { ProxySessionRegistry } from "./proxy-sessions.ts";

/** Proxy mode as a notary offers it: its limits and policy, and the roots a target's chain must lead to. */
export interface ProxyModeOptions extends ProxyLimits {
  /** Node's root certificates, plus the test CA when TLSN_TEST_TRUST_ANCHOR is set: the same set as MPC mode. */
  trustAnchorsPem: readonly string[];
}

export interface ProxyRouteDeps {
  sessions: ProxySessionRegistry;
  proxy: ProxyModeOptions;
  key: NotaryKey;
  context: AttestationContext;
  metrics: NotaryMetrics;
  log: Logger;
}

export function proxyRoutes(deps: ProxyRouteDeps) {
  const { sessions, log } = deps;
  return new Elysia({ name: "notary-proxy" })
    .post("/proxy-session", async ({ body }): Promise<SessionCreated> => {
      const request = parseInput(ProxySessionRequest, body, "invalid_body", "proxy session request");
      const sessionId = await sessions.create(request);
      deps.metrics.sessionCreated();
      log.info("proxy session created", { sessionId, serverName: request.serverName, port: request.port });
      return { sessionId };
    })
    .delete("/proxy-session/:id", ({ params }) => {
      sessions.release(params.id);
      return new Response(null, { status: 204 });
    })
    .post("/proxy-session/:id/attestation", async ({ body, params }) => {
      try {
        const request = parseInput(ProxyAttestationRequest, body, "invalid_body", "proxy attestation request");
        const relayed = await sessions.takeRelayed(params.id);
        const proof = deps.metrics.timeSigning(() => {
          const verified = verifyRelayedSession(relayed.bytes, request.keys, {
            serverName: relayed.serverName,
            trustAnchorsPem: deps.proxy.trustAnchorsPem,
            now: new Date(),
          });
          const proofBody = buildProxyProofBody(verified, request, deps.context);
          return signProof(withEvmAttestation(proofBody, deps.key), deps.key);
        });
        deps.metrics.attestation("signed");
        log.info("proxy proof signed", { sessionId: params.id, requestId: request.requestId });
        return proof;
      } catch (error) {
        deps.metrics.attestation(error instanceof AppError ? error.code : "internal");
        throw error;
      }
    });
}
