import { Elysia } from "elysia";
import type { SessionLimits } from "../config/notary.ts";
import { startLoopbackBridge } from "../engine/bridge.ts";
import type { EngineVerifiers } from "../engine/verifier.ts";
import { AppError } from "../errors.ts";
import { errorHandling, errorResponse, parseInput } from "../http.ts";
import { idleLimit } from "../idle-limit.ts";
import type { Logger } from "../log.ts";
import { PROOF_VERSION, type SignatureAlgorithm } from "../proof/format.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { notaryEvmAddress, withEvmAttestation } from "../proof/evm-attestation.ts";
import { signProof } from "../proof/sign.ts";
import { ATTESTATION_WAIT_MS, AttestationRequest, type NotaryInfo, type SessionCreated, SessionRequest, type SessionRunning } from "../protocol/notary.ts";
import { GIT_COMMIT, VERSION } from "../version.ts";
import { buildProofBody } from "../notary/attest.ts";
import { IDLE_TIMEOUT_S, MAX_MPC_MESSAGE_BYTES, MPC_BACKLOG_BYTES, PROXY_ATTESTATION_MAX_BYTES, maxJsonBodyBytes } from "../notary/limits.ts";
import { NotaryMetrics } from "../metrics/notary.ts";
import type { Registry } from "../metrics/registry.ts";
import { metricsRoutes } from "../metrics/routes.ts";
import { type ProxyModeOptions, proxyRoutes } from "../notary/proxy-routes.ts";
import { createProxySessions } from "../notary/proxy-sessions.ts";
import { type NotarySocketData, createSessionRegistry } from "../notary/sessions.ts";
import { whitelistChecker } from "../notary/whitelist.ts";
import { apiKeyMatcher } from "../api-key.ts";

export interface NotaryServerOptions {
  host: string;
  port: number;
  sessions: SessionLimits;
  /** Where its Verifiers run: this process's engine, or a prover's engine hosts. */
  verifiers: EngineVerifiers;
  key: NotaryKey;
  tls?: { cert: string; key: string };
  /**
   * Who may use the session routes and metrics: a standalone notary's API-key whitelist (re-read when the file
   * changes), or the one key an embedded notary shares with its prover alone; unset = no authentication.
   */
  auth?: { whitelistPath: string } | { embeddedKey: string };
  testTrustAnchor: boolean;
  /** Proxy mode, when the notary offers it. */
  proxy?: ProxyModeOptions;
  log: Logger;
}

export interface NotaryServer {
  url: string;
  port: number;
  activeSessions(): number;
  /** Its metrics (also served at its own /metrics). */
  metrics: Registry;
  /** Stops accepting sessions, waits up to graceMs for running ones, then closes. */
  stop(graceMs?: number): Promise<void>;
}

/** API key from `Authorization: Bearer <key>` or a bare `Authorization: <key>` (TLSNotary clients send it bare). */
const apiKeyOf = (request: Request) => request.headers.get("authorization")?.replace(/^Bearer\s+/i, "").trim() ?? "";

/** The session routes cost a place or act on one: with a whitelist, they need a listed key. */
const isSessionRoute = (pathname: string) => /^\/(proxy-)?session(\/|$)/.test(pathname);
/** Routes that need a whitelisted key when auth is on: the session routes and the metrics. */
const needsKey = (pathname: string) => isSessionRoute(pathname) || pathname === "/metrics";

function allowedKeys(auth: NotaryServerOptions["auth"]): (apiKey: string) => boolean {
  if (!auth) return () => true;
  if ("whitelistPath" in auth) return whitelistChecker(auth.whitelistPath);
  const matches = apiKeyMatcher([auth.embeddedKey]);
  return (apiKey) => matches(apiKey);
}

export function startNotaryServer(options: NotaryServerOptions): NotaryServer {
  const { log } = options;
  const bridge = startLoopbackBridge();
  const sessions = createSessionRegistry(options.sessions, bridge, options.verifiers, log);
  const metrics = new NotaryMetrics({ activeSessions: () => sessions.active(), failedSessions: () => sessions.failures() });
  const isAllowed = allowedKeys(options.auth);
  const embedded = options.auth !== undefined && "embeddedKey" in options.auth;
  const proxySessions = options.proxy && createProxySessions(options.sessions, options.proxy, log);
  // A proxy proof's answer may be far larger than an MPC session's, and its redaction spans with it.
  const bodyLimit = Math.max(maxJsonBodyBytes(options.sessions), options.proxy ? PROXY_ATTESTATION_MAX_BYTES : 0);
  let stopping = false;

  const info = {
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
    proxyMode: Boolean(options.proxy),
  } satisfies NotaryInfo & Record<string, unknown>;

  const attestationContext = {
    publicKeyPem: options.key.publicKeyPem,
    algorithm: options.key.algorithm,
    testTrustAnchor: options.testTrustAnchor,
    notaryVersion: VERSION,
    embedded,
  };
  const app = new Elysia()
    .use(errorHandling(log))
    // activeSessions lets operators (and tests) see that finished or failed sessions were released.
    .get("/info", () => ({ ...info, activeSessions: sessions.active(), activeProxySessions: proxySessions?.active() ?? 0 }))
    .get("/healthcheck", () => new Response("Ok"))
    .use(metricsRoutes(metrics.registry))
    .post("/session", ({ body }): SessionCreated => {
      const sizes = parseInput(SessionRequest, body, "invalid_body", "session request");
      const sessionId = sessions.create(sizes);
      metrics.sessionCreated();
      log.info("session created", { sessionId, maxSentData: sizes.maxSentData, maxRecvData: sizes.maxRecvData });
      return { sessionId };
    })
    .get("/session/:id", ({ params }): SessionRunning => {
      // Lets a prover check a warm session before using it; the id is the capability.
      if (!sessions.isRunning(params.id)) throw new AppError("not_found", "unknown or finished session");
      return { sessionId: params.id, state: "running" };
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
          const proofBody = buildProofBody(output, declared, attestationContext);
          // The EVM attestation goes inside the body, so the tlsproof/1 signature covers it too.
          return signProof(withEvmAttestation(proofBody, options.key), options.key);
        });
        metrics.attestation("signed");
        log.info("proof signed", { sessionId: params.id, requestId: declared.requestId });
        return proof;
      } catch (error) {
        metrics.attestation(error instanceof AppError ? error.code : "internal");
        throw error;
      }
    });
  if (proxySessions && options.proxy) {
    app.use(proxyRoutes({ sessions: proxySessions, proxy: options.proxy, key: options.key, context: attestationContext, metrics, log }));
  } else {
    app.post("/proxy-session", () => {
      throw new AppError("proxy_mode_unavailable", "this notary does not offer proxy mode (its YAML config needs proxy: { enabled: true })");
    });
  }

  /** Refusals decided from the request line and headers alone, before any body is read. */
  function refusal(request: Request, pathname: string): AppError | undefined {
    if (needsKey(pathname)) {
      if (stopping && request.method === "POST" && pathname === "/session") return new AppError("shutting_down", "the notary is shutting down");
      if (!isAllowed(apiKeyOf(request))) return new AppError("unauthorized", "a whitelisted API key is required");
    }
    if (request.method !== "POST") return undefined;
    // Every body is bounded by its declared length before a byte of it is read.
    const declared = request.headers.get("content-length");
    if (declared === null) return new AppError("invalid_header", "a Content-Length header is required");
    if (Number(declared) > bodyLimit) return new AppError("payload_too_large", `the request body exceeds ${bodyLimit} bytes`);
    return undefined;
  }

  const idle = idleLimit(() => server, IDLE_TIMEOUT_S);
  const server = Bun.serve<NotarySocketData>({
    hostname: options.host,
    port: options.port,
    idleTimeout: IDLE_TIMEOUT_S,
    ...(options.tls ? { tls: options.tls } : {}),
    fetch(request, srv) {
      const { pathname, searchParams } = new URL(request.url);
      if (pathname === "/notarize") {
        const sessionId = searchParams.get("sessionId") ?? "";
        if (!sessions.has(sessionId)) return errorResponse(new AppError("not_found", "unknown or used session"), { pathname });
        if (srv.upgrade(request, { data: { sessionId, kind: "mpc" } })) return undefined;
        return errorResponse(new AppError("invalid_header", "a WebSocket upgrade is required"), { pathname });
      }
      if (pathname === "/relay") {
        const sessionId = searchParams.get("sessionId") ?? "";
        if (!proxySessions?.has(sessionId)) return errorResponse(new AppError("not_found", "unknown or used proxy session"), { pathname });
        if (srv.upgrade(request, { data: { sessionId, kind: "relay" } })) return undefined;
        return errorResponse(new AppError("invalid_header", "a WebSocket upgrade is required"), { pathname });
      }
      const refused = refusal(request, pathname);
      if (refused) return errorResponse(refused, { pathname });
      // An attestation waits for the verification to end; the prover waits as long. Its keep-alive connection
      // then idles under the usual limit again.
      if (pathname.endsWith("/attestation")) {
        idle.lift(request, Math.ceil(ATTESTATION_WAIT_MS / 1000) + IDLE_TIMEOUT_S);
        return app.handle(request).finally(() => idle.restore(request));
      }
      return app.handle(request);
    },
    websocket: {
      maxPayloadLength: MAX_MPC_MESSAGE_BYTES,
      backpressureLimit: MPC_BACKLOG_BYTES,
      closeOnBackpressureLimit: true,
      // A warm session's socket is quiet until its request comes; the session timeout bounds it.
      idleTimeout: 0,
      open: (ws) => (ws.data.kind === "relay" ? proxySessions?.attach(ws) : sessions.attach(ws)),
      message: (ws, message) => {
        const bytes = typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);
        if (ws.data.kind === "relay") proxySessions?.forward(ws, bytes);
        else sessions.forward(ws, bytes);
      },
      drain: (ws) => {
        if (ws.data.kind === "relay") proxySessions?.drain(ws);
      },
      close: (ws, code) => (ws.data.kind === "relay" ? proxySessions?.detach(ws) : sessions.detach(ws, code)),
    },
  });

  const scheme = options.tls ? "https" : "http";
  const host = options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host;
  return {
    url: `${scheme}://${host}:${server.port}`,
    port: server.port ?? options.port,
    activeSessions: () => sessions.active(),
    metrics: metrics.registry,
    async stop(graceMs = 0) {
      stopping = true;
      const deadline = Date.now() + graceMs;
      while (sessions.active() > 0 && Date.now() < deadline) await Bun.sleep(100);
      sessions.closeAll("the notary shut down");
      proxySessions?.closeAll();
      server.stop(true);
      bridge.stop();
    },
  };
}
