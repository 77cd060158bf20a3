import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Elysia } from "elysia";
import { startLoopbackBridge } from "../engine/bridge.ts";
import { setupProverSession } from "../engine/session.ts";
import { EngineHosts } from "../engine/host/engine-hosts.ts";
import { AppError } from "../errors.ts";
import { errorHandling, errorResponse } from "../http.ts";
import type { Logger } from "../log.ts";
import { ProverMetrics } from "../metrics/prover.ts";
import { Registry } from "../metrics/registry.ts";
import { metricsRoutes } from "../metrics/routes.ts";
import { countedMessageStore, countedProofRecords } from "../metrics/store.ts";
import { loadOrCreateKey } from "../notary/key-files.ts";
import { decodePublicKeyPem } from "../proof/keys.ts";
import { testCaPoint, trustAnchors } from "../engine/trust-anchor.ts";
import { openApiRoutes } from "../openapi/routes.ts";
import { type NotaryServer, startNotaryServer } from "./notary.ts";
import { loadNodeKey, openStore } from "../store/index.ts";
import { storeRoutes } from "../store/routes.ts";
import { viewerRoutes } from "../viewer/routes.ts";
import type { ProverConfig } from "../config/prover.ts";
import { apiKeyAuth, callerOf, keysOn, ownProofsOnly } from "../prover/auth.ts";
import { createSessionSlots } from "../prover/exchange/capacity.ts";
import { type InstancePresence, joinCluster } from "../prover/delivery/instance-presence.ts";
import { createNotaryClient } from "../prover/notary/client.ts";
import { NotaryPool } from "../prover/notary/notary-pool.ts";
import { EndpointSizes } from "../prover/pool/endpoint-sizes.ts";
import { createWarmPool } from "../prover/pool/pool.ts";
import { poolRoutes } from "../prover/pool/routes.ts";
import { notaryInfoRoutes } from "../prover/notary/routes.ts";
import { ProofDelivery } from "../prover/delivery/proof-delivery.ts";
import { ProofHub } from "../prover/delivery/proof-hub.ts";
import { startRetention } from "../store/retention.ts";
import { proxyRoutes } from "../prover/proxy/routes.ts";
import { engineSuiteCheck } from "../prover/mpc/mpc-probe.ts";
import { discardSession } from "../prover/mpc/session-run.ts";
import { idleLimit } from "../idle-limit.ts";
import { proofRoutes } from "../prover/delivery/routes.ts";
import { createTurnGate } from "../prover/pool/turn-gate.ts";
import { corsPolicy } from "../prover/cors.ts";
import { RouteAccessTable } from "../prover/route-access.ts";
import type { DescribedRoute } from "../http/route.ts";
import { proverApi, proxyOperations } from "../openapi/prover-api.ts";
import { statusRoutes } from "./prover-status.ts";
import type { LoopbackBridge } from "../engine/bridge.ts";
import type { IdleLimit } from "../idle-limit.ts";
import type { NodeKey } from "../store/node-key.ts";
import type { Retention } from "../store/retention.ts";
import type { Store } from "../store/index.ts";
import type { SessionSlots } from "../prover/exchange/capacity.ts";
import type { WarmPool } from "../prover/pool/pool.ts";
import type { TurnGate } from "../prover/pool/turn-gate.ts";

export interface ProverServer {
  url: string;
  port: number;
  /** The embedded notary, when the prover runs one. */
  notary?: NotaryServer;
  /** The routes the app answers, as Elysia lists them (`ALL` for any method), with what each declares. */
  routes(): DescribedRoute[];
  stop(graceMs?: number): Promise<void>;
}

/** The test CA's PEM, checked now (a config_invalid at start, not an engine host that fails later). */
function readTrustAnchor(path: string | undefined): string | undefined {
  if (!path) return undefined;
  let pem: string;
  try {
    pem = readFileSync(path, "utf8");
  } catch {
    throw new AppError("file_unreadable", `TLSN_TEST_TRUST_ANCHOR: cannot read ${path}`);
  }
  testCaPoint(pem);
  return pem;
}

/** Notaries are checked every 5 s; one that fails is checked again after 1 s, doubling to 30 s. */
const NOTARY_HEALTH = { checkEveryMs: 5_000, backoff: { firstMs: 1_000, maxMs: 30_000 } };

/** The engines a prover proves with and the notaries it proves with: its own embedded one, or remote ones. */
interface Notaries {
  hosts: EngineHosts;
  embedded?: NotaryServer;
  notary: NotaryPool;
  testTrustAnchor: boolean;
  trustAnchorsPem: string[];
}

async function startNotaries(config: ProverConfig, log: Logger): Promise<Notaries> {
  const testTrustAnchorPem = readTrustAnchor(config.engine.testTrustAnchorPath);
  if (testTrustAnchorPem) {
    log.warn("TEST TRUST ANCHOR IN USE: a test CA replaces a built-in root; proofs made now are flagged as test proofs", {
      path: config.engine.testTrustAnchorPath,
    });
  }
  const testTrustAnchor = Boolean(testTrustAnchorPem);
  const trustAnchorsPem = trustAnchors(testTrustAnchorPem);
  const hosts = await EngineHosts.start({
    count: config.engine.hosts,
    embeddedNotary: config.notary.urls.length === 0,
    threads: config.engine.threads,
    testTrustAnchorPem,
    hangMs: config.engine.hangMs,
    pauseRefills: config.engine.pauseRefills,
    log: log.child({ component: "engine" }),
  });

  let embedded: NotaryServer | undefined;
  // The embedded notary listens on loopback, where any local process could ask it for sessions and
  // signatures: it takes only this key, made afresh each start and known to this process alone.
  const embeddedKey = randomBytes(32).toString("base64url");
  // The embedded notary's proofs must be signed with its own key; remote ones' with the pinned keys.
  let pinnedKeys = config.notary.pinnedKeys;
  if (config.notary.urls.length === 0) {
    const key = loadOrCreateKey(config.dataDir);
    pinnedKeys = [decodePublicKeyPem(key.publicKeyPem)];
    // Its Verifiers run in the engine hosts beside the provers: this process holds no wasm instance.
    embedded = startNotaryServer({
      host: "127.0.0.1",
      port: 0,
      sessions: config.notary.embedded,
      verifiers: hosts.verifiers,
      key,
      auth: { embeddedKey },
      testTrustAnchor,
      // Proxy mode under the prover's own target policy: `npm start` proves in either mode.
      proxy: { ...config.proxyMode.embedded, trustAnchorsPem: trustAnchorsPem },
      log: log.child({ component: "notary" }),
    });
    log.info("embedded notary started", { url: embedded.url, publicKey: `${config.dataDir}/notary.pub` });
  }
  const notaryUrls = embedded ? [embedded.url] : config.notary.urls;
  const notary = new NotaryPool(
    notaryUrls.map((url) => createNotaryClient(url, embedded ? embeddedKey : config.notary.apiKey, pinnedKeys)),
    { ...NOTARY_HEALTH, log: log.child({ component: "notaries" }) },
  );
  return { hosts, embedded, notary, testTrustAnchor, trustAnchorsPem };
}

/** What the prover's routes serve and what it stops: its notaries, its pool, its store, its limits. */
interface ProverParts extends Notaries {
  metrics: ProverMetrics;
  pool: WarmPool;
  store: Store;
  nodeKey: NodeKey;
  delivery: ProofDelivery;
  presence?: InstancePresence;
  retention?: Retention;
  bridge: LoopbackBridge;
  idle: IdleLimit;
  slots: SessionSlots;
  proxySlots: SessionSlots;
  answerBytes: SessionSlots;
  endpointSizes: EndpointSizes;
  exchanges: TurnGate;
  /** Aborted once the shutdown grace has run out with MPC sessions still running. */
  graceOver: AbortController;
  /** Who asks for a proof stream, for the per-client cap: the API key, or the address without keys. */
  proofClient(request: Request): string;
}

/** The app: each route group mounted with the access its routes declare, which the API key check and the OpenAPI document read. */
function proverApp(config: ProverConfig, parts: ProverParts, log: Logger) {
  const { notary, embedded, pool, hosts, metrics, endpointSizes, exchanges } = parts;
  const access = new RouteAccessTable();
  const app = new Elysia().use(errorHandling(log, (pathname) => access.errorShapeOf(pathname))).use(apiKeyAuth(config.auth, config.store, access));
  const nodeAddress = parts.nodeKey.address;
  access.mount(app, statusRoutes({ notary, nodeAddress, embeddedNotary: embedded !== undefined, sessionSizes: config.sessionLimits, testTrustAnchor: parts.testTrustAnchor }));
  access.mount(app, notaryInfoRoutes(notary));
  access.mount(app, proofRoutes(parts.delivery, config.sse, parts.idle, { clientOf: parts.proofClient, ownProofsOnly: ownProofsOnly(config.auth) }));
  access.mountUndeclared(
    app,
    proxyRoutes({
      notary,
      bridge: parts.bridge,
      delivery: parts.delivery,
      sessions: pool,
      ...config.proxy,
      slots: parts.slots,
      shutdown: parts.graceOver.signal,
      // With API keys on, Authorization carries the prover's key: it must never reach the target.
      authorizationIsOurs: keysOn(config.auth),
      idleLimit: parts.idle,
      timeProxy: (call) => metrics.proxyTimer(call),
      repeatTooLarge: config.pool.repeatTooLarge,
      defaultMode: config.proxyMode.defaultMode,
      proxySlots: parts.proxySlots,
      answerBytes: parts.answerBytes,
      trustAnchorsPem: parts.trustAnchorsPem,
      proxyMaxRecvData: config.proxyMode.maxRecvData,
      endpointSizes,
      exchanges,
      engineSuite: engineSuiteCheck(),
      log,
    }),
    "key-or-scoped",
    proxyOperations(),
  );
  // The warm pool's state and its run-time requests: sessions cost memory and CPU.
  access.mount(app, poolRoutes({ pool, hosts, endpointSizes, exchanges, policy: config.proxy.policy, notarySessions: () => embedded?.activeSessions() ?? null }));
  access.mount(app, viewerRoutes(log));
  // With an embedded notary, its metrics are the prover's too.
  access.mount(app, metricsRoutes(embedded ? Registry.merge([metrics.registry, embedded.metrics]) : metrics.registry));
  const messages = countedMessageStore(parts.store.messages, metrics);
  access.mount(app, storeRoutes({ store: messages, nodeKey: parts.nodeKey, proofStream: config.store.proofStream, maxStreams: config.store.maxStreams }));
  // The document describes the app's routes, this one included: added once the others exist.
  access.mount(app, openApiRoutes(() => access.describe(app.routes), proverApi));
  return { app, access };
}

/**
 * Stops accepting, lets running sessions finish their proofs for up to graceMs, then ends every open proof
 * stream with `shutting_down` and closes.
 */
async function stopProver(server: ReturnType<typeof Bun.serve>, parts: ProverParts, graceMs: number, log: Logger): Promise<void> {
  const { slots } = parts;
  const idle = server.stop(false);
  const [, mpcDrained] = await Promise.all([parts.proxySlots.drained(graceMs), slots.drained(graceMs)]);
  if (!mpcDrained) {
    log.warn("grace period over; abandoning running sessions", { active: slots.active() });
    parts.graceOver.abort();
    // Their /proxy calls answer 503 shutting_down and their ids are settled so, before the connections close.
    await slots.drained(5_000);
  }
  parts.delivery.closeAll();
  // The streams just told end on their own; a client that keeps a connection open is cut after a moment.
  await Promise.race([idle, Bun.sleep(2000)]);
  await server.stop(true);
  parts.pool.stop();
  parts.notary.stop();
  await parts.presence?.stop();
  await parts.embedded?.stop(0);
  parts.bridge.stop();
  await parts.hosts.stop();
  await parts.retention?.stop();
  await parts.store.close();
}

/** The store, this process's proof records in it (their metrics counted), and the cluster of provers sharing it (PostgreSQL). */
async function openStorage(config: ProverConfig, metrics: ProverMetrics, log: Logger) {
  const store = await openStore({ url: config.store.url, dataDir: config.dataDir });
  const nodeKey = loadNodeKey(config.dataDir);
  // Each process is its own instance: a restarted prover does not own the ids its previous process left.
  const instanceId = crypto.randomUUID();
  const shared = Boolean(config.store.url);
  const records = countedProofRecords(await store.proofRecords(nodeKey, config.store.proofStream, shared ? instanceId : undefined), metrics);
  const cluster = await store.cluster(instanceId);
  // A SQLite store belongs to this prover alone: ids it left pending died with its previous process.
  // A PostgreSQL store may be shared by running provers, whose pending ids are theirs to settle.
  if (!config.store.url) {
    const settled = await records.failPending({ code: "session_failed", message: "the prover stopped before this proof was made" });
    if (settled > 0) log.warn("request ids left pending by the previous run settled as failed", { count: settled });
  }
  const retention = config.store.retentionMs === undefined ? undefined : startRetention(records, config.store.retentionMs, log.child({ component: "retention" }));
  return { store, nodeKey, records, cluster, retention };
}

export async function startProverServer(config: ProverConfig, log: Logger): Promise<ProverServer> {
  const notaries = await startNotaries(config, log);
  const { hosts, embedded, notary } = notaries;
  const sizes = config.sessionLimits;
  // Its sources are read at scrape time, once everything below exists.
  const metrics = new ProverMetrics({
    pool: () => pool.status(),
    exchanges: () => exchanges.status(),
    liveSessions: () => slots.active(),
    proxyModeSessions: () => proxySlots.active(),
    engineBytes: () => hosts.engineBytes(),
    rssBytes: () => process.memoryUsage.rss(),
    engineHosts: () => {
      const running = hosts.status();
      return { running: running.length, rssBytes: running.reduce((sum, h) => sum + h.memory.rssBytes, 0), replaced: hosts.replaced };
    },
    sseSubscribers: () => delivery.totalSubscribers(),
    notarySessions: () => embedded?.activeSessions() ?? null,
  });
  const pool = createWarmPool({
    ...config.pool,
    limits: sizes,
    setup: (serverName, sessionSizes, signal, background) =>
      metrics.timeSetup(sessionSizes, () => setupProverSession(notary, hosts, serverName, sessionSizes, { signal, background, stallMs: config.engine.setupStallMs }), background),
    sessionTimeoutMs: config.proxy.sessionTimeoutMs,
    discard: (session) => discardSession(notary, session),
    // Asked afresh: the health checks' last result still says up for a notary killed a moment ago.
    notaryReachable: () => notary.answersNow(),
    isAlive: (session) => notary.isRunning(session.notarySessionId),
    besideSetup: (session) => hosts.besideSetup(session.engine),
    refillsYield: () => hosts.refillsYield,
    hasRoom: (sessionSizes) => hosts.fitsBeside([sessionSizes, sizes]),
    log: log.child({ component: "pool" }),
  });
  log.info("warm pool", { size: config.pool.size, hosts: config.pool.hosts.join(",") || "learned", idleS: config.pool.idleMs / 1000 });

  const { store, nodeKey, records, cluster, retention } = await openStorage(config, metrics, log);
  const bridge = startLoopbackBridge();
  // Set just below (it needs the delivery); ids are claimed only once the server listens.
  let presence: InstancePresence | undefined;
  const delivery = new ProofDelivery(new ProofHub(config.delivery), records, config.delivery, log.child({ component: "delivery" }), async () => presence?.confirmAlive());
  // PostgreSQL: outcomes settled by any prover sharing the store reach this one's subscribers.
  presence = cluster && (await joinCluster(cluster, (requestId) => void delivery.settledElsewhere(requestId), config.store.instanceTimeoutMs, log.child({ component: "cluster" })));
  const slots = createSessionSlots(config.proxy.maxSessions);
  const proxySlots = createSessionSlots(config.proxyMode.maxSessions);
  const answerBytes = createSessionSlots(
    config.proxyMode.inFlightBytes,
    (max) => `the prover holds its maximum of ${max} proxy-mode answer bytes in flight (PROVER_PROXY_INFLIGHT_BYTES); announce a smaller answer with T-MAX-RECV-DATA, or retry later`,
  );
  const exchanges = createTurnGate(config.pool.concurrentExchanges);
  const keysAreOn = keysOn(config.auth);
  const parts: ProverParts = {
    ...notaries, metrics, pool, store, nodeKey, delivery, presence, retention, bridge, slots, proxySlots, answerBytes, exchanges,
    idle: idleLimit(() => server, config.listen.idleTimeoutS),
    endpointSizes: new EndpointSizes(config.pool.learnEndpoints),
    graceOver: new AbortController(),
    proofClient: (request) => callerOf(request, keysAreOn, server.requestIP(request)?.address),
  };
  const { app, access } = proverApp(config, parts, log);

  let stopping = false;
  const cors = corsPolicy(config.corsOrigins, (pathname) => access.errorShapeOf(pathname));
  const server = Bun.serve({
    hostname: config.listen.host,
    port: config.listen.port,
    idleTimeout: config.listen.idleTimeoutS,
    maxRequestBodySize: config.listen.maxRequestBodyBytes,
    async fetch(request) {
      const preflight = cors.preflight(request);
      if (preflight) return preflight;
      const { pathname } = new URL(request.url);
      if (stopping) return cors.decorate(request, errorResponse(new AppError("shutting_down", "the prover is shutting down"), { shape: access.errorShapeOf(pathname) }));
      return cors.decorate(request, await app.handle(request));
    },
  });
  const host = config.listen.host === "0.0.0.0" || config.listen.host === "::" ? "127.0.0.1" : config.listen.host;
  return {
    url: `http://${host}:${server.port}`,
    port: server.port ?? config.listen.port,
    notary: embedded,
    routes: () => access.describe(app.routes),
    async stop(graceMs = 0) {
      stopping = true;
      await stopProver(server, parts, graceMs, log);
    },
  };
}
