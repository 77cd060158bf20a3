/** The notary's proxy-mode routes (src/protocol/notary.ts lists them); the relay WebSocket is in sockets.ts. */
import { Elysia } from "elysia";
import type { ProxyLimits } from "../config/notary.ts";
import { parseInput } from "../http.ts";
import { ProxyAttestationRequest, ProxySessionRequest, type SessionCreated } from "../protocol/notary.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import type { ProxySessionRegistry } from "./proxy-mode/sessions.ts";
import { type ProxyVerification, proxyTranscript } from "./proxy-mode/transcript.ts";

/** Proxy mode as a notary offers it: its limits and policy, and the roots a target's chain must lead to. */
export interface ProxyModeOptions extends ProxyLimits, ProxyVerification {}

export interface ProxyRouteDeps extends AttestationDeps {
  sessions: ProxySessionRegistry;
  proxy: ProxyModeOptions;
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
    .post("/proxy-session/:id/attestation", ({ body, params }) => {
      const askedAt = Date.now();
      return attest(
        deps,
        params.id,
        () => parseInput(ProxyAttestationRequest, body, "invalid_body", "proxy attestation request"),
        async ({ keys }) => proxyTranscript(await sessions.takeRelayed(params.id), keys, deps.proxy, askedAt),
      );
    });
}
