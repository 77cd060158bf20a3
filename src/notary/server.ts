import { statSync } from "node:fs";
import { Elysia } from "elysia";
import * as v from "valibot";
import { startLoopbackBridge } from "../engine/bridge.ts";
import { AppError } from "../errors.ts";
import { errorHandling, errorResponse, parseInput } from "../http.ts";
import type { Logger } from "../log.ts";
import { PROOF_VERSION, type SignatureAlgorithm } from "../proof/format.ts";
import { signProof } from "../proof/sign.ts";
import type { NotaryKey } from "../proof/keys.ts";
import { VERSION, GIT_COMMIT } from "../version.ts";
import { buildProofBody } from "./attest.ts";
import { type ProverSocketData, createSessionRegistry } from "./sessions.ts";

export interface NotaryServerOptions {
  host: string;
  port: number;
  concurrency: number;
  maxSentData: number;
  maxRecvData: number;
  timeoutMs: number;
  key: NotaryKey;
  tls?: { cert: string; key: string };
  /** API keys allowed to open sessions, re-read when the whitelist file changes. */
  whitelist?: { path: string; load: (path: string) => Map<string, string> };
  testTrustAnchor: boolean;
  log: Logger;
}

export interface NotaryServer {
  url: string;
  port: number;
  activeSessions(): number;
  /** Stops accepting sessions, waits up to graceMs for running ones, then closes. */
  stop(graceMs?: number): Promise<void>;
}

const SessionRequest = v.strictObject({
  clientType: v.optional(v.string()),
  maxSentData: v.pipe(v.number(), v.integer(), v.minValue(1)),
  maxRecvData: v.pipe(v.number(), v.integer(), v.minValue(1)),
});

const Span = v.strictObject({
  direction: v.picklist(["sent", "recv"]),
  start: v.pipe(v.number(), v.integer(), v.minValue(0)),
  end: v.pipe(v.number(), v.integer(), v.minValue(0)),
});

const AttestationRequest = v.strictObject({
  requestId: v.pipe(v.string(), v.uuid()),
  redactions: v.pipe(
    v.array(v.strictObject({ pattern: v.pipe(v.string(), v.maxLength(1024)), spans: v.array(Span), matched: v.boolean() })),
    v.maxLength(256),
  ),
});

/** API key from `Authorization: Bearer <key>` or a bare `Authorization: <key>` (TLSNotary clients send it bare). */
const apiKeyOf = (request: Request) => request.headers.get("authorization")?.replace(/^Bearer\s+/i, "").trim() ?? "";

function whitelistChecker(whitelist: NonNullable<NotaryServerOptions["whitelist"]>) {
  let loadedAt = -1;
  let keys = new Map<string, string>();
  return (apiKey: string): boolean => {
    // Re-read when the file changes; a broken edit keeps the last good list rather than opening the door.
    const mtime = statSync(whitelist.path, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (mtime !== loadedAt) {
      try {
        keys = whitelist.load(whitelist.path);
      } catch {}
      loadedAt = mtime;
    }
    return apiKey !== "" && keys.has(apiKey);
  };
}

export function startNotaryServer(options: NotaryServerOptions): NotaryServer {
  const { log } = options;
  const bridge = startLoopbackBridge();
  const sessions = createSessionRegistry(
    {
      concurrency: options.concurrency,
      maxSentData: options.maxSentData,
      maxRecvData: options.maxRecvData,
      timeoutMs: options.timeoutMs,
    },
    bridge,
    log,
  );
  const isAllowed = options.whitelist ? whitelistChecker(options.whitelist) : () => true;
  let stopping = false;

  const info = {
    version: VERSION,
    gitCommitHash: GIT_COMMIT ?? null,
    publicKey: options.key.publicKeyPem,
    signatureAlgorithm: options.key.algorithm satisfies SignatureAlgorithm,
    proofVersion: PROOF_VERSION,
    maxSentData: options.maxSentData,
    maxRecvData: options.maxRecvData,
    testTrustAnchor: options.testTrustAnchor,
  };

  const app = new Elysia()
    .use(errorHandling(log))
    // activeSessions lets operators (and tests) see that finished or failed sessions were released.
    .get("/info", () => ({ ...info, activeSessions: sessions.active() }))
    .get("/healthcheck", () => new Response("Ok"))
    .post("/session", ({ body, request }) => {
      if (stopping) throw new AppError("shutting_down", "the notary is shutting down");
      if (!isAllowed(apiKeyOf(request))) throw new AppError("unauthorized", "a whitelisted API key is required");
      const sizes = parseInput(SessionRequest, body, "invalid_body", "session request");
      const sessionId = sessions.create(sizes);
      log.info("session created", { sessionId, maxSentData: sizes.maxSentData, maxRecvData: sizes.maxRecvData });
      return { sessionId };
    })
    .get("/session/:id", ({ params }) => {
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
      const declared = parseInput(AttestationRequest, body, "invalid_body", "attestation request");
      const output = await sessions.takeVerified(params.id);
      const proofBody = buildProofBody(output, declared, {
        publicKeyPem: options.key.publicKeyPem,
        algorithm: options.key.algorithm,
        testTrustAnchor: options.testTrustAnchor,
        notaryVersion: VERSION,
      });
      log.info("proof signed", { sessionId: params.id, requestId: declared.requestId });
      return signProof(proofBody, options.key);
    });

  const server = Bun.serve<ProverSocketData>({
    hostname: options.host,
    port: options.port,
    idleTimeout: 0,
    ...(options.tls ? { tls: options.tls } : {}),
    fetch(request, srv) {
      const url = new URL(request.url);
      if (url.pathname === "/notarize") {
        const sessionId = url.searchParams.get("sessionId") ?? "";
        if (!sessions.has(sessionId)) return errorResponse(new AppError("not_found", "unknown or used session"));
        if (srv.upgrade(request, { data: { sessionId } })) return undefined;
        return errorResponse(new AppError("invalid_header", "a WebSocket upgrade is required"));
      }
      return app.handle(request);
    },
    websocket: {
      maxPayloadLength: 256 * 1024 * 1024,
      backpressureLimit: 64 * 1024 * 1024,
      idleTimeout: 0,
      open: (ws) => sessions.attach(ws),
      message: (ws, message) =>
        sessions.forward(ws, typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message)),
      close: (ws) => sessions.detach(ws),
    },
  });

  const scheme = options.tls ? "https" : "http";
  const host = options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host;
  return {
    url: `${scheme}://${host}:${server.port}`,
    port: server.port ?? options.port,
    activeSessions: () => sessions.active(),
    async stop(graceMs = 0) {
      stopping = true;
      const deadline = Date.now() + graceMs;
      while (sessions.active() > 0 && Date.now() < deadline) await Bun.sleep(100);
      sessions.closeAll("the notary shut down");
      server.stop(true);
      bridge.stop();
    },
  };
}
