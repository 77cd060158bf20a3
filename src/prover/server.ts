import { readFileSync } from "node:fs";
import { Elysia } from "elysia";
import { startLoopbackBridge } from "../engine/bridge.ts";
import { closeProverSession, setupProverSession } from "../engine/session.ts";
import { startEngine } from "../engine/wasm.ts";
import { AppError } from "../errors.ts";
import { errorHandling, errorResponse } from "../http.ts";
import type { Logger } from "../log.ts";
import { loadOrCreateKey } from "../notary/key-files.ts";
import { type NotaryServer, startNotaryServer } from "../notary/server.ts";
import { loadNodeKey, openStore } from "../store/index.ts";
import { storeRoutes } from "../store/routes.ts";
import { VERSION } from "../version.ts";
import type { ProverConfig } from "./config.ts";
import { apiKeyAuth } from "./auth.ts";
import { createSessionSlots } from "./capacity.ts";
import { createNotaryClient } from "./notary-client.ts";
import { createWarmPool } from "./pool.ts";
import { poolRoutes } from "./pool-routes.ts";
import { createProofHub } from "./proof-hub.ts";
import { proxyRoutes } from "./proxy.ts";
import { proofRoutes } from "./sse.ts";

export interface ProverServer {
  url: string;
  port: number;
  /** The embedded notary, when the prover runs one. */
  notary?: NotaryServer;
  stop(graceMs?: number): Promise<void>;
}

function readTrustAnchor(path: string | undefined): string | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch {
    throw new AppError("file_unreadable", `TLSN_TEST_TRUST_ANCHOR: cannot read ${path}`);
  }
}

export async function startProverServer(config: ProverConfig, log: Logger): Promise<ProverServer> {
  const testTrustAnchorPem = readTrustAnchor(config.testTrustAnchorPath);
  if (testTrustAnchorPem) {
    log.warn("TEST TRUST ANCHOR IN USE: a test CA replaces a built-in root; proofs made now are flagged as test proofs", {
      path: config.testTrustAnchorPath,
    });
  }
  const engine = await startEngine({ threads: config.threads, testTrustAnchorPem });
  const sizes = { maxSentData: config.maxSentData, maxRecvData: config.maxRecvData };

  let embedded: NotaryServer | undefined;
  if (!config.notaryUrl) {
    const key = loadOrCreateKey(config.dataDir);
    embedded = startNotaryServer({
      host: "127.0.0.1",
      port: 0,
      concurrency: 64,
      ...sizes,
      timeoutMs: 30 * 60 * 1000,
      key,
      testTrustAnchor: engine.testTrustAnchor,
      log: log.child({ component: "notary" }),
    });
    log.info("embedded notary started", { publicKey: `${config.dataDir}/notary.pub` });
  }
  const notary = createNotaryClient(config.notaryUrl ?? embedded!.url, config.notaryApiKey);
  const pool = createWarmPool({
    ...config.pool,
    limits: sizes,
    setup: (serverName, sessionSizes) => setupProverSession(notary, serverName, sessionSizes),
    discard(session) {
      closeProverSession(session);
      void notary.release(session.notarySessionId);
    },
    isAlive: (session) => notary.isRunning(session.notarySessionId),
    log: log.child({ component: "pool" }),
  });
  log.info("warm pool", { size: config.pool.size, hosts: config.pool.hosts.join(",") || "learned", idleS: config.pool.idleMs / 1000 });

  const store = await openStore({ url: config.storeUrl, dataDir: config.dataDir });
  const nodeKey = loadNodeKey(config.dataDir);
  const records = await store.proofRecords(nodeKey, config.proofStream);
  const bridge = startLoopbackBridge();
  const hub = createProofHub({ retentionMs: 10 * 60 * 1000, pendingMs: 10 * 60 * 1000, maxEntries: 100_000 });
  const slots = createSessionSlots(config.maxSessions);
  let stopping = false;

  const app = new Elysia()
    .use(errorHandling(log))
    .use(apiKeyAuth(config.apiKeys, { proofStream: config.proofStream, publicProofs: config.publicProofs }))
    .get("/healthcheck", () => new Response("Ok"))
    .get("/info", async () => {
      const notaryInfo = await notary.info().catch(() => null);
      return {
        version: VERSION,
        nodeAddress: nodeKey.address,
        notary: notaryInfo && { url: config.notaryUrl ?? "embedded", ...notaryInfo },
        sessionSizes: sizes,
        testTrustAnchor: engine.testTrustAnchor,
      };
    })
    .use(proofRoutes(hub, { ...config.sse, heartbeatMs: 10_000 }))
    .use(
      proxyRoutes({
        notary,
        bridge,
        hub,
        sessions: pool,
        policy: { allowPrivateTargets: config.allowPrivateTargets, resolve: config.resolve, allowedHosts: config.allowedHosts },
        maxBodyBytes: config.maxBodyBytes,
        connectTimeoutMs: config.connectTimeoutMs,
        responseTimeoutMs: config.responseTimeoutMs,
        sessionTimeoutMs: config.sessionTimeoutMs,
        slots,
        // With API keys on, Authorization carries the prover's key: it must never reach the target.
        authorizationIsOurs: config.apiKeys.length > 0,
        onProof: (proof) => records.saveProof(proof.body.requestId, proof),
        log,
      }),
    )
    .use(poolRoutes(pool, () => embedded?.activeSessions() ?? null))
    .use(storeRoutes({ store: store.messages, nodeKey, proofStream: config.proofStream, maxStreams: config.storeStreams }));

  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // SSE streams send a heartbeat every 10 s; the idle limit must be longer.
    idleTimeout: 60,
    maxRequestBodySize: config.maxBodyBytes + 64 * 1024,
    fetch(request, srv) {
      const { pathname } = new URL(request.url);
      if (stopping) return errorResponse(new AppError("shutting_down", "the prover is shutting down"), { pathname });
      // A proof's MPC exchange is silent for tens of seconds: /proxy is exempt from the idle limit.
      if (pathname === "/proxy") srv.timeout(request, 0);
      return app.handle(request);
    },
  });
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  return {
    url: `http://${host}:${server.port}`,
    port: server.port ?? config.port,
    notary: embedded,
    /**
     * Stops accepting, lets running sessions finish their proofs for up to graceMs, then ends every
     * open proof stream with `shutting_down` and closes.
     */
    async stop(graceMs = 0) {
      stopping = true;
      const idle = server.stop(false);
      if (!(await slots.drained(graceMs))) log.warn("grace period over; abandoning running sessions", { active: slots.active() });
      hub.closeAll((requestId) => ({ event: "error", requestId, code: "shutting_down", message: "the prover is shutting down" }));
      // The streams just told end on their own; a client that keeps a connection open is cut after a moment.
      await Promise.race([idle, Bun.sleep(2000)]);
      await server.stop(true);
      pool.stop();
      await embedded?.stop(0);
      bridge.stop();
      await store.close();
    },
  };
}
