import { Elysia } from "elysia";
import * as v from "valibot";
import type { SessionLimits } from "../protocol/limits.ts";
import { startLoopbackBridge } from "../engine/bridge.ts";
import type { EngineVerifiers } from "../engine/verifier.ts";
import { errorHandling, errorResponse } from "../http/error-handling.ts";
import { healthcheck } from "../http/health.ts";
import { DeclaredRoutes, routeGuard } from "../http/route-guard.ts";
import { type DescribedRoute, type RouteGroup, bindRoute, declareRoute, describeRoutes, groupRoutes, routeGroup } from "../http/route.ts";
import { idleLimit } from "../http/idle-limit.ts";
import type { Logger } from "../base/log.ts";
import { PROOF_VERSION, type SignatureAlgorithm } from "../proof/format.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { notaryEvmAddress } from "../proof/evm-attestation.ts";
import { BUILT_IN_MODES, knowModeFacts } from "../proof/modes.ts";
import { ATTESTATION_WAIT_MS, NotaryInfo, type SocketEnd, type SocketListener, modeRoutes } from "../protocol/notary.ts";
import { GIT_COMMIT, VERSION } from "../base/version.ts";
import { type NotaryAuth, type Refusal, notaryAdmission } from "../notary/admission.ts";
import type { AttestationContext } from "../notary/attest.ts";
import { IDLE_TIMEOUT_S } from "../notary/limits.ts";
import { NotaryMetrics } from "../metrics/notary.ts";
import type { Registry } from "../metrics/registry.ts";
import { metricsRoutes } from "../metrics/routes.ts";
import { type NotaryModeBackend, NotaryModes, type NotarySocketData } from "../notary/modes.ts";
import { mpcNotaryBackend } from "../notary/mpc/mode.ts";
import { MpcSessions } from "../notary/mpc/sessions.ts";
import { type ProxyModeOptions, proxyNotaryBackend } from "../notary/proxy-mode/mode.ts";
import { sessionRoutes } from "../notary/session-routes.ts";
import { inProcessSocket, socketHandlers, socketUpgrade } from "../notary/sockets.ts";
import type { ApiDescription } from "../openapi/document.ts";
import { openApiRoutes } from "../openapi/routes.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { type AttestationLedger, memoryLedger } from "../notary/ledger.ts";

export interface NotaryServerOptions {
  host: string;
  port: number;
  sessions: SessionLimits;
  /** Where its Verifiers run: this process's engine, or a prover's engine hosts. */
  verifiers: EngineVerifiers;
  key: NotaryKey;
  /**
   * The request ids it signed (src/notary/ledger.ts), closed by `stop`. Default: a ledger in memory, right only for
   * a key that lives in this process alone (a key kept in a file needs a ledger that outlives the process).
   */
  ledger?: AttestationLedger;
  tls?: { cert: string; key: string };
  /** Who may use the session routes and metrics (see NotaryAuth); unset = no authentication. */
  auth?: NotaryAuth;
  testTrustAnchor: boolean;
  /** Proxy mode, when the notary offers it. */
  proxy?: ProxyModeOptions;
  /** Modes beyond the built-in ones, each made for this notary by its backend (docs/design.md, "How to add a mode"). */
  furtherModes?: readonly NotaryModeBackend[];
  log: Logger;
}

export interface NotaryServer {
  url: string;
  port: number;
  activeSessions(): number;
  /** Its metrics (also served at its own /metrics). */
  metrics: Registry;
  /** The routes it answers, as Elysia lists them, with what each declares. */
  routes(): DescribedRoute[];
  /**
   * Answers one HTTP request as its server does, without a socket (admission first; no WebSocket upgrade): how the
   * prover that embeds it calls it.
   */
  handle(request: Request): Promise<Response>;
  /**
   * Opens the mode's socket that the WebSocket URL `url` names, in this process (no upgrade): how the prover that
   * embeds it relays. Throws `not_found` where the upgrade would answer 404.
   */
  openSocket(url: string, listener: SocketListener): SocketEnd;
  /** Stops accepting sessions, waits up to graceMs for running ones, then closes. */
  stop(graceMs?: number): Promise<void>;
}

/** What GET /info says of this notary; the live counts are added per request. */
function notaryInfo(options: NotaryServerOptions, modes: NotaryModes) {
  return {
    version: VERSION,
    gitCommitHash: GIT_COMMIT ?? null,
    publicKey: options.key.publicKeyPem,
    signatureAlgorithm: options.key.algorithm satisfies SignatureAlgorithm,
    // The address EVM attestations recover to; null with a secp256r1 key, which makes none.
    ethereumAddress: notaryEvmAddress(options.key),
    proofVersion: PROOF_VERSION,
    maxSentData: options.sessions.maxSentData,
    maxRecvData: options.sessions.maxRecvData,
    testTrustAnchor: options.testTrustAnchor,
    proxyMode: modes.get("proxy") !== undefined,
    modes: modes.names(),
  } satisfies NotaryInfo & Record<string, unknown>;
}

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

const notaryInfoRoute = declareRoute({
  method: "GET",
  path: "/info",
  operationId: "info",
  summary: "the notary: its version, key, limits, the proof modes it offers, and its open sessions",
  access: "open",
  responses: {
    200: {
      description: "about this notary",
      content: {
        "application/json": v.object({
          ...NotaryInfo.entries,
          gitCommitHash: v.nullable(v.string()),
          proofVersion: v.string(),
          maxSentData: count,
          maxRecvData: count,
          // activeSessions lets operators (and tests) see that finished or failed sessions were released.
          activeSessions: count,
          activeProxySessions: count,
          /** Open sessions of each mode it offers. */
          activeByMode: v.record(v.string(), count),
        }),
      },
    },
  },
});

const notaryApi: ApiDescription = {
  title: "tlsproof notary",
  description: "The other party of every proof: it verifies what it saw and signs what was revealed. docs/notary.md has the full contract.",
  keyDescription: "a key of the notary's whitelist (its YAML `whitelist`), or an embedded notary's own key, when set",
  keyRefusals: ["unauthorized"],
  schemas: { Proof: proofSchema },
};

function attestationContext(options: NotaryServerOptions): AttestationContext {
  return {
    publicKeyPem: options.key.publicKeyPem,
    algorithm: options.key.algorithm,
    testTrustAnchor: options.testTrustAnchor,
    notaryVersion: VERSION,
    embedded: options.auth !== undefined && "embeddedKey" in options.auth,
  };
}

/**
 * The modes this notary offers: MPC always, proxy mode when its options are given, then the further modes it was
 * given (src/notary/modes.ts). Each gets its metrics' refusal counter and its own limits.
 */
function offeredModes(options: NotaryServerOptions, mpcSessions: MpcSessions, metrics: NotaryMetrics): NotaryModes {
  const backends = [
    mpcNotaryBackend(mpcSessions, options.sessions),
    ...(options.proxy ? [proxyNotaryBackend(options.sessions, options.proxy, (reason) => metrics.proxyRefused(reason))] : []),
    ...(options.furtherModes ?? []),
  ];
  return new NotaryModes(backends, { log: options.log, testTrustAnchor: options.testTrustAnchor });
}

/** Every mode's session path, offered or not: a built-in mode this notary does not offer still answers, with its refusal. */
const sessionPaths = (modes: NotaryModes): string[] =>
  [...new Set([...Object.keys(BUILT_IN_MODES), ...modes.names()])].map((mode) => modeRoutes(mode).session);

/** The HTTP routes: info, health and metrics, then the session routes of every mode, then the document; each call admitted first. */
function notaryRoutes(options: NotaryServerOptions, ledger: AttestationLedger, modes: NotaryModes, metrics: NotaryMetrics, refusal: Refusal) {
  const { log } = options;
  const info = notaryInfo(options, modes);
  const context = attestationContext(options);
  const active = (mode: string) => modes.get(mode)?.active() ?? 0;
  const status = bindRoute(notaryInfoRoute, () => ({
    ...info,
    activeSessions: active("mpc"),
    activeProxySessions: active("proxy"),
    activeByMode: Object.fromEntries(modes.names().map((mode) => [mode, active(mode)])),
  }));
  const groups: RouteGroup[] = [
    routeGroup("notary-status", [healthcheck, status]),
    metricsRoutes(metrics.registry),
    sessionRoutes(modes, { key: options.key, ledger, context, metrics, log }),
  ];
  const declared = new DeclaredRoutes();
  // Admission first: a path no route answers meets it before the error handler answers "not found".
  const app = new Elysia().use(routeGuard(declared, (request, route) => {
    const refused = refusal(request, route);
    return refused && errorResponse(refused);
  })).use(errorHandling(log));
  const routes = () => describeRoutes(app.routes, declared.all());
  groups.push(openApiRoutes(routes, notaryApi));
  for (const group of groups) {
    app.use(group);
    declared.add(groupRoutes(group));
  }
  return { app, routes };
}

/** The listening server: sockets first, then the routes (each call admitted before its body is read). */
function serveNotary(options: NotaryServerOptions, modes: NotaryModes, app: { handle(request: Request): Promise<Response> }) {
  const idle = idleLimit(() => server, IDLE_TIMEOUT_S);
  const server = Bun.serve<NotarySocketData>({
    hostname: options.host,
    port: options.port,
    idleTimeout: IDLE_TIMEOUT_S,
    ...(options.tls ? { tls: options.tls } : {}),
    fetch(request, srv) {
      const upgraded = socketUpgrade(modes, request, srv);
      if (upgraded !== null) return upgraded;
      const { pathname } = new URL(request.url);
      // An attestation waits for the verification to end; the prover waits as long. Its keep-alive connection
      // then idles under the usual limit again.
      if (pathname.endsWith("/attestation")) {
        idle.lift(request, Math.ceil(ATTESTATION_WAIT_MS / 1000) + IDLE_TIMEOUT_S);
        return app.handle(request).finally(() => idle.restore(request));
      }
      return app.handle(request);
    },
    websocket: socketHandlers(modes),
  });
  return server;
}

export function startNotaryServer(options: NotaryServerOptions): NotaryServer {
  const bridge = startLoopbackBridge();
  const sessions = new MpcSessions(options.sessions, bridge, options.verifiers, options.log);
  const metrics = new NotaryMetrics({ activeSessions: () => sessions.active(), failedSessions: () => sessions.failures() });
  // It signs the further modes' attestations under their facts: known while it runs.
  const forgetFacts = knowModeFacts((options.furtherModes ?? []).map((backend) => backend.facts));
  const modes = offeredModes(options, sessions, metrics);
  let stopping = false;
  // The largest request body: a proxy proof's answer may be far larger than an MPC session's, and its spans with it.
  const bodyLimit = Math.max(...modes.all().map((mode) => mode.maxBodyBytes));
  const refusal = notaryAdmission({ auth: options.auth, sessionPaths: sessionPaths(modes), bodyLimit, stopping: () => stopping });
  const ledger = options.ledger ?? memoryLedger();
  const { app, routes } = notaryRoutes(options, ledger, modes, metrics, refusal);
  const server = serveNotary(options, modes, app);

  const scheme = options.tls ? "https" : "http";
  const host = options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host;
  return {
    url: `${scheme}://${host}:${server.port}`,
    port: server.port ?? options.port,
    activeSessions: () => sessions.active(),
    metrics: metrics.registry,
    routes,
    handle: (request) => app.handle(request),
    openSocket: (url, listener) => inProcessSocket(modes, url, listener, options.log),
    async stop(graceMs = 0) {
      stopping = true;
      const deadline = Date.now() + graceMs;
      while (modes.active() > 0 && Date.now() < deadline) await Bun.sleep(100);
      for (const mode of modes.all()) mode.closeAll("the notary shut down");
      server.stop(true);
      bridge.stop();
      await ledger.close();
      forgetFacts();
    },
  };
}
