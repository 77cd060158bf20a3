/** The notary's proxy-mode routes (src/protocol/notary.ts lists them); the relay WebSocket is in sockets.ts. */
import type { ProxyLimits } from "../config/notary.ts";
import { AppError } from "../errors.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import { ProxyAttestationRequest, ProxySessionRequest } from "../protocol/notary.ts";
import { BODY_REFUSALS } from "./admission.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import type { ProxySessionRegistry } from "./proxy-sessions.ts";
import { type ProxyVerification, proxyTranscript } from "./proxy-transcript.ts";
import { attestationRoute, releaseRoute, sessionCreated } from "./session-routes.ts";

/** Proxy mode as a notary offers it: its limits and policy, and the roots a target's chain must lead to. */
export interface ProxyModeOptions extends ProxyLimits, ProxyVerification {}

export interface ProxyRouteDeps extends AttestationDeps {
  sessions: ProxySessionRegistry;
  proxy: ProxyModeOptions;
}

export const createProxySessionRoute = declareRoute({
  method: "POST",
  path: "/proxy-session",
  operationId: "createProxySession",
  summary: "open a proxy-mode session: the notary connects to the target; its prover then relays through GET /relay?sessionId=",
  access: "key",
  body: { schema: ProxySessionRequest, code: "invalid_body", wording: { where: "proxy session request" } },
  responses: sessionCreated,
  errors: [...BODY_REFUSALS, "proxy_mode_unavailable", "over_capacity", "target_forbidden", "target_unresolvable", "target_unreachable"],
});

const releaseProxySessionRoute = releaseRoute("/proxy-session/:id", "releaseProxySession");
const proxyAttestationRoute = attestationRoute("/proxy-session/:id/attestation", "attestProxySession", ProxyAttestationRequest, "proxy attestation request", [
  "transcript_invalid",
  "attestation_late",
  "tls_untrusted",
]);

export function proxyRoutes(deps: ProxyRouteDeps): RouteGroup {
  const { sessions, log } = deps;
  return routeGroup("notary-proxy", [
    bindRoute(createProxySessionRoute, async ({ body }) => {
      const request = await body();
      const sessionId = await sessions.create(request);
      deps.metrics.sessionCreated();
      log.info("proxy session created", { sessionId, serverName: request.serverName, port: request.port });
      return { sessionId };
    }),
    bindRoute(releaseProxySessionRoute, ({ params: { id } }) => {
      sessions.release(id);
      return new Response(null, { status: 204 });
    }),
    bindRoute(proxyAttestationRoute, ({ params: { id }, body }) => {
      const askedAt = Date.now();
      return attest(deps, id, body, async ({ keys }) => proxyTranscript(await sessions.takeRelayed(id), keys, deps.proxy, askedAt));
    }),
  ]);
}

/** A notary without proxy mode answers its creation route with the refusal, so that a prover learns why. */
export const proxyModeRefusal = (): RouteGroup =>
  routeGroup("notary-proxy-refused", [
    bindRoute(createProxySessionRoute, () => {
      throw new AppError("proxy_mode_unavailable", "this notary does not offer proxy mode (its YAML config needs proxy: { enabled: true })");
    }),
  ]);
