import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { type AnyElysia, Elysia } from "elysia";
import { type LoopbackBridge, startLoopbackBridge } from "../engine/bridge.ts";
import { setupProverSession } from "../engine/session.ts";
import { EngineHosts } from "../engine/host/engine-hosts.ts";
import { AppError } from "../core/errors.ts";
import { type FolderLock, lockFolder } from "../core/folder-lock.ts";
import { errorHandling, errorResponse } from "../http/error-handling.ts";
import type { Logger } from "../base/log.ts";
import { ProverMetrics } from "../metrics/prover.ts";
import { Registry } from "../metrics/registry.ts";
import { metricsRoutes } from "../metrics/routes.ts";
import { countedMessageStore, countedProofRecords } from "../metrics/store.ts";
import { loadOrCreateKey } from "../notary/key-files.ts";
import { decodePublicKeyPem, publicKeyFingerprint } from "../proof/keys.ts";
import { openLedger } from "../notary/ledger.ts";
import { LEDGER_FILE } from "../notary/config.ts";
import { testCaPoint, trustAnchors } from "../engine/trust-anchor.ts";
import { openApiRoutes } from "../openapi/routes.ts";
import { type NotaryServer, startNotaryServer } from "./notary.ts";
import { type NodeKey, type Store, loadNodeKey, openStore } from "../store/index.ts";
import { storeRoutes } from "../store/routes.ts";
import { viewerRoutes } from "../viewer/routes.ts";
import type { ProverConfig } from "../prover/config.ts";
import { apiKeyAuth, callerOf, keysOn, ownProofsOnly } from "../prover/auth.ts";
import { type SessionSlots, createSessionSlots } from "../prover/exchange/capacity.ts";
import { type InstancePresence, joinCluster } from "../prover/delivery/instance-presence.ts";
import { createNotaryClient } from "../prover/notary/client.ts";
import { inProcessTransport } from "../prover/notary/transport.ts";
import { NotaryPool } from "../prover/notary/notary-pool.ts";
import { EndpointSizes } from "../prover/mpc/pool/endpoint-sizes.ts";
import { type WarmPool, createWarmPool } from "../prover/mpc/pool/pool.ts";
import { poolRoutes } from "../prover/mpc/pool/routes.ts";
import { notaryInfoRoutes } from "../prover/notary/routes.ts";
import { ProofDelivery } from "../prover/delivery/proof-delivery.ts";
import { ProofHub } from "../prover/delivery/proof-hub.ts";
import { messagePruning, proofPruning, startRetention } from "../store/retention.ts";
import { proxyRoutes } from "../prover/call/routes.ts";
import { mpcBackend } from "../prover/mpc/mode.ts";
import { type MpcNotary, discardSession, mpcNotarySessions } from "../prover/mpc/notary-sessions.ts";
import { proxyModeBackend } from "../prover/proxy-mode/mode.ts";
import { type ProofLifecycle, proofLifecycle } from "../prover/proving/lifecycle.ts";
import { type ProvingModeBackend, ProvingModes } from "../prover/proving/registry.ts";
import { knowModeFacts } from "../proof/modes.ts";
import type { NotaryModeBackend } from "../notary/modes.ts";
import { type IdleLimit, idleLimit } from "../http/idle-limit.ts";
import { proofRoutes } from "../prover/delivery/routes.ts";
import { type TurnGate, createTurnGate } from "../prover/mpc/pool/turn-gate.ts";
import { corsPolicy } from "../prover/cors.ts";
import { RouteAccessTable } from "../prover/route-access.ts";
import type { DescribedRoute } from "../http/route.ts";
import { proverApi } from "../openapi/prover-api.ts";
import { statusRoutes } from "./prover-status.ts";

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

interface Notaries {
  hosts: EngineHosts;
  /** The embedded notary, unless PROVER_NOTARY_URL names remote ones. */
  embedded?: NotaryServer;
  notary: NotaryPool;
}

/** The engine hosts, the embedded notary (unless remote notaries are configured), and one client of the notaries. */
async function startNotaries(config: ProverConfig, testTrustAnchorPem: string | undefined, further: FurtherModes, log: Logger): Promise<Notaries> {
  // No process yet: the hosts start with the first MPC session placed.
  const hosts = new EngineHosts({
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
    // Beside its key, in the data folder this prover holds the lock of: a restart keeps the ids it signed.
    const ledger = await openLedger({ kind: "sqlite", path: join(config.dataDir, LEDGER_FILE) }, publicKeyFingerprint(pinnedKeys[0]!));
    // Its Verifiers run in the engine hosts beside the provers: this process holds no wasm instance.
    embedded = startNotaryServer({
      host: "127.0.0.1",
      port: 0,
      sessions: config.notary.embedded,
      verifiers: hosts.verifiers,
      key,
      ledger,
      auth: { embeddedKey },
      testTrustAnchor: Boolean(testTrustAnchorPem),
      // Proxy mode under the prover's own target policy: `npm start` proves in either mode.
      proxy: { ...config.proxyMode.embedded, trustAnchorsPem: trustAnchors(testTrustAnchorPem) },
      furtherModes: further.notary,
      log: log.child({ component: "notary" }),
    });
    log.info("embedded notary started", { url: embedded.url, publicKey: `${config.dataDir}/notary.pub` });
  }
  // The embedded notary's HTTP calls and relays stay in this process; its MPC sockets use its loopback port (the engine opens them).
  const clients = embedded
    ? [createNotaryClient(embedded.url, embeddedKey, pinnedKeys, inProcessTransport(embedded))]
    : config.notary.urls.map((url) => createNotaryClient(url, config.notary.apiKey, pinnedKeys));
  const notary = new NotaryPool(
    clients,
    { ...NOTARY_HEALTH, log: log.child({ component: "notaries" }) },
  );
  return { hosts, embedded, notary };
}

interface Delivery {
  store: Store;
  nodeKey: NodeKey;
  delivery: ProofDelivery;
  presence?: InstancePresence;
  retention?: { stop(): Promise<void> };
}

/** The message store, the request ids' records and their delivery; on a shared PostgreSQL store, the cluster's presence. */
async function openDelivery(config: ProverConfig, metrics: ProverMetrics, log: Logger): Promise<Delivery> {
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
  const retentionLog = log.child({ component: "retention" });
  const retentions = [
    config.store.retentionMs === undefined ? undefined : startRetention(proofPruning(records), config.store.retentionMs, retentionLog),
    config.store.messageRetentionMs === undefined ? undefined : startRetention(messagePruning(store.messages, config.store.proofStream), config.store.messageRetentionMs, retentionLog),
  ].filter((retention) => retention !== undefined);
  const retention = { stop: async () => void (await Promise.all(retentions.map((each) => each.stop()))) };
  // Set just below (it needs the delivery); ids are claimed only once the server listens.
  let presence: InstancePresence | undefined;
  const delivery = new ProofDelivery(new ProofHub(config.delivery), records, config.delivery, log.child({ component: "delivery" }), async () => presence?.confirmAlive());
  // PostgreSQL: outcomes settled by any prover sharing the store reach this one's subscribers.
  presence = cluster && (await joinCluster(cluster, (requestId) => void delivery.settledElsewhere(requestId), config.store.instanceTimeoutMs, log.child({ component: "cluster" })));
  return { store, nodeKey, delivery, presence, retention };
}

/** What the proof modes run on: MPC's warm pool and turns, both modes' places. */
interface ModeParts {
  notary: NotaryPool;
  mpcNotary: MpcNotary;
  bridge: LoopbackBridge;
  pool: WarmPool;
  slots: SessionSlots;
  proxySlots: SessionSlots;
  answerBytes: SessionSlots;
  endpointSizes: EndpointSizes;
  exchanges: TurnGate;
  trustAnchorsPem: readonly string[];
}

/** The modes this prover offers: the built-in backends, then the further ones, each made with the prover's context (src/prover/proving/registry.ts). */
function provingModes(config: ProverConfig, parts: ModeParts, further: readonly ProvingModeBackend[], log: Logger): ProvingModes {
  const { notary, trustAnchorsPem } = parts;
  const { policy, connectTimeoutMs, responseTimeoutMs } = config.proxy;
  const mpc = mpcBackend({ ...parts, sessions: parts.pool, sessionTimeoutMs: config.proxy.sessionTimeoutMs, repeatTooLarge: config.pool.repeatTooLarge });
  const proxy = proxyModeBackend({
    ...parts,
    maxRecvData: config.proxyMode.maxRecvData,
    maxHiddenSpanBytes: config.proxyMode.maxHiddenSpanBytes,
    sessionTimeoutMs: config.proxyMode.embedded.sessionTimeoutMs,
  });
  return new ProvingModes([mpc, proxy, ...further], { notary, policy, trustAnchorsPem, connectTimeoutMs, responseTimeoutMs, log });
}

/** What the routes serve. */
interface RouteParts extends Notaries, Delivery {
  metrics: ProverMetrics;
  pool: WarmPool;
  endpointSizes: EndpointSizes;
  exchanges: TurnGate;
  modes: ProvingModes;
  lifecycle: ProofLifecycle;
  idle: IdleLimit;
  testTrustAnchor: boolean;
  /** The caller's address, as the server saw it. */
  addressOf(request: Request): string | undefined;
}

/** The app: each route group mounted with the access its routes declare, which the API key check and the OpenAPI document read. */
function proverApp(config: ProverConfig, parts: RouteParts, log: Logger): { app: AnyElysia; access: RouteAccessTable } {
  const { notary, embedded, delivery, idle } = parts;
  const access = new RouteAccessTable();
  // The key check first: a path no route answers meets it before the error handler answers "not found".
  const app = new Elysia().use(apiKeyAuth(config.auth, config.store, access)).use(errorHandling(log, (pathname) => access.errorShapeOf(pathname)));
  const nodeAddress = parts.nodeKey.address;
  access.mount(app, statusRoutes({ notary, nodeAddress, embeddedNotary: embedded !== undefined, sessionSizes: config.sessionLimits, testTrustAnchor: parts.testTrustAnchor }));
  access.mount(app, notaryInfoRoutes(notary));
  // Proof streams are capped per API key, or per address without keys.
  const keysAreOn = keysOn(config.auth);
  const proofClient = (request: Request): string => callerOf(request, keysAreOn, parts.addressOf(request));
  access.mount(app, proofRoutes(delivery, config.sse, idle, { clientOf: proofClient, ownProofsOnly: ownProofsOnly(config.auth) }));
  const proxy = proxyRoutes({
    modes: parts.modes,
    lifecycle: parts.lifecycle,
    delivery,
    defaultMode: config.proxyMode.defaultMode,
    defaultQuorum: config.notary.quorum,
    notaries: notary.size,
    maxBodyBytes: config.proxy.maxBodyBytes,
    // With API keys on, Authorization carries the prover's key: it must never reach the target.
    authorizationIsOurs: keysAreOn,
    idleLimit: idle,
    identifyingHeaders: config.proxy.identifyingHeaders,
  });
  access.mount(app, proxy);
  // The warm pool's state and its run-time requests: sessions cost memory and CPU.
  const { pool, hosts, endpointSizes, exchanges } = parts;
  access.mount(app, poolRoutes({ pool, hosts, endpointSizes, exchanges, policy: config.proxy.policy, notarySessions: () => embedded?.activeSessions() ?? null }));
  access.mount(app, viewerRoutes(log));
  // With an embedded notary, its metrics are the prover's too.
  access.mount(app, metricsRoutes(embedded ? Registry.merge([parts.metrics.registry, embedded.metrics]) : parts.metrics.registry));
  const store = storeRoutes({
    store: countedMessageStore(parts.store.messages, parts.metrics),
    nodeKey: parts.nodeKey,
    proofStream: config.store.proofStream,
    places: config.store.places,
    publishQuota: config.store.publishQuota,
    clientOf: proofClient,
  });
  access.mount(app, store);
  // The document describes the app's routes, this one included: added once the others exist.
  access.mount(app, openApiRoutes(() => access.describe(app.routes), proverApi));
  return { app, access };
}

/** MPC sessions set up in advance, on the engine hosts, with the notaries. */
function startWarmPool(config: ProverConfig, { hosts, notary }: Notaries, mpcNotary: MpcNotary, metrics: ProverMetrics, log: Logger): WarmPool {
  const sizes = config.sessionLimits;
  const pool = createWarmPool({
    ...config.pool,
    limits: sizes,
    setup: (serverName, sessionSizes, signal, background) =>
      metrics.timeSetup(sessionSizes, () => setupProverSession(mpcNotary, hosts, serverName, sessionSizes, { signal, background, stallMs: config.engine.setupStallMs }), background),
    sessionTimeoutMs: config.proxy.sessionTimeoutMs,
    discard: (session) => discardSession(mpcNotary, session),
    // Asked afresh: the health checks' last result still says up for a notary killed a moment ago.
    notaryReachable: () => notary.answersNow(),
    isAlive: (session) => mpcNotary.isRunning(session.notarySessionId),
    besideSetup: (session) => hosts.besideSetup(session.engine),
    refillsYield: () => hosts.refillsYield,
    hasRoom: (sessionSizes) => hosts.fitsBeside([sessionSizes, sizes]),
    log: log.child({ component: "pool" }),
  });
  log.info("warm pool", { size: config.pool.size, hosts: config.pool.hosts.join(",") || "learned", idleS: config.pool.idleMs / 1000 });
  return pool;
}

/** The port, taken before anything else: until the app is ready every request is 503 `starting`. */
function listen(config: ProverConfig): Server<undefined> {
  return Bun.serve({
    hostname: config.listen.host,
    port: config.listen.port,
    idleTimeout: config.listen.idleTimeoutS,
    maxRequestBodySize: config.listen.maxRequestBodyBytes,
    fetch: () => errorResponse(new AppError("starting", "the prover is starting"), { headers: { "retry-after": "1" } }),
  });
}

/** The listening server's handler: CORS first, then the app; while stopping, every request is refused as such. */
function serve(server: Server<undefined>, config: ProverConfig, app: AnyElysia, access: RouteAccessTable, stopping: () => boolean): void {
  const cors = corsPolicy(config.corsOrigins, (pathname) => access.errorShapeOf(pathname));
  server.reload({
    async fetch(request) {
      const preflight = cors.preflight(request);
      if (preflight) return preflight;
      const { pathname } = new URL(request.url);
      if (stopping()) return cors.decorate(request, errorResponse(new AppError("shutting_down", "the prover is shutting down"), { shape: access.errorShapeOf(pathname) }));
      return cors.decorate(request, await app.handle(request));
    },
  });
}

/**
 * Modes beyond the built-in ones (docs/design.md, "How to add a mode"): their prover sides, made for this prover by
 * their backends, and their notary sides, for its embedded notary.
 */
export interface FurtherModes {
  proving?: readonly ProvingModeBackend[];
  notary?: readonly NotaryModeBackend[];
}

/**
 * Starts a prover: its port first, then its data folder's lock (src/core/folder-lock.ts), then everything that uses
 * the folder. A second prover on a taken port or a held folder stops before it touches the folder: the ids its
 * owner is proving stay its owner's.
 */
export async function startProverServer(config: ProverConfig, log: Logger, further: FurtherModes = {}): Promise<ProverServer> {
  // Settings set under their former names: said once, at start.
  for (const line of config.deprecated) log.warn(line);
  const server = listen(config);
  let lock: FolderLock | undefined;
  // Its notary client reads the further modes' facts: known while it runs.
  const forgetFacts = knowModeFacts((further.proving ?? []).map((backend) => backend.facts));
  try {
    lock = lockFolder(config.dataDir, "PROVER_DATA_DIR");
    return await startOnPort(server, { lock, forgetFacts }, config, further, log);
  } catch (error) {
    lock?.release();
    forgetFacts();
    server.stop(true);
    throw error;
  }
}

/** What a prover releases last when it stops: its data folder's lock, and the further modes' facts. */
interface Held {
  lock: FolderLock;
  forgetFacts(): void;
}

async function startOnPort(server: Server<undefined>, held: Held, config: ProverConfig, further: FurtherModes, log: Logger): Promise<ProverServer> {
  const testTrustAnchorPem = readTrustAnchor(config.engine.testTrustAnchorPath);
  if (testTrustAnchorPem) {
    log.warn("TEST TRUST ANCHOR IN USE: a test CA replaces a built-in root; proofs made now are flagged as test proofs", {
      path: config.engine.testTrustAnchorPath,
    });
  }
  const notaries = await startNotaries(config, testTrustAnchorPem, further, log);
  const { hosts, embedded, notary } = notaries;
  // MPC sessions as the engine and the warm pool ask the notaries for them.
  const mpcNotary = mpcNotarySessions(notary);
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
  const pool = startWarmPool(config, notaries, mpcNotary, metrics, log);
  const opened = await openDelivery(config, metrics, log);
  const { delivery } = opened;
  const bridge = startLoopbackBridge();
  const idle = idleLimit(() => server, config.listen.idleTimeoutS);
  const slots = createSessionSlots(config.proxy.maxSessions);
  const proxySlots = createSessionSlots(config.proxyMode.maxSessions);
  const answerBytes = createSessionSlots(
    config.proxyMode.inFlightBytes,
    (max) => `the prover holds its maximum of ${max} proxy-mode answer bytes in flight (PROVER_PROXY_INFLIGHT_BYTES); announce a smaller answer with T-MAX-RECV-DATA, or retry later`,
  );
  const endpointSizes = new EndpointSizes(config.pool.learnEndpoints);
  const exchanges = createTurnGate(config.pool.concurrentExchanges);
  const trustAnchorsPem = trustAnchors(testTrustAnchorPem);
  const modeParts = { notary, mpcNotary, bridge, pool, slots, proxySlots, answerBytes, endpointSizes, exchanges, trustAnchorsPem };
  const modes = provingModes(config, modeParts, further.proving ?? [], log);
  /** Aborted once the shutdown grace has run out with proofs still running. */
  const graceOver = new AbortController();
  const lifecycle = proofLifecycle({ notary, delivery, shutdown: graceOver.signal, timeProxy: (call) => metrics.proxyTimer(call), log });
  const routeParts = { ...notaries, ...opened, metrics, pool, endpointSizes, exchanges, modes, lifecycle, idle, testTrustAnchor: Boolean(testTrustAnchorPem) };
  const { app, access } = proverApp(config, { ...routeParts, addressOf: (request) => server.requestIP(request)?.address }, log);

  let stopping = false;
  serve(server, config, app, access, () => stopping);
  const host = config.listen.host === "0.0.0.0" || config.listen.host === "::" ? "127.0.0.1" : config.listen.host;
  return {
    url: `http://${host}:${server.port}`,
    port: server.port ?? config.listen.port,
    notary: embedded,
    routes: () => access.describe(app.routes),
    /**
     * Stops accepting, lets running proofs finish for up to graceMs, then ends every open proof stream with
     * `shutting_down` and closes.
     */
    async stop(graceMs = 0) {
      stopping = true;
      const active = () => slots.active() + proxySlots.active();
      await stopRunning({ server, lifecycle, graceOver, active, delivery, pool, notary, opened, embedded, bridge, hosts, held }, graceMs, log);
    },
  };
}

/** What a running prover stops, in this order. */
interface RunningParts {
  server: Server<undefined>;
  lifecycle: ProofLifecycle;
  graceOver: AbortController;
  /** Sessions still running, of every mode. */
  active(): number;
  delivery: ProofDelivery;
  pool: WarmPool;
  notary: NotaryPool;
  opened: Delivery;
  embedded?: NotaryServer;
  bridge: LoopbackBridge;
  hosts: EngineHosts;
  held: Held;
}

async function stopRunning(parts: RunningParts, graceMs: number, log: Logger): Promise<void> {
  const { server, lifecycle, delivery, opened } = parts;
  const idle = server.stop(false);
  if (!(await lifecycle.drained(graceMs))) {
    log.warn("grace period over; abandoning running sessions", { active: parts.active() });
    parts.graceOver.abort();
    // Their /proxy calls answer 503 shutting_down and their ids are settled so, before the connections close.
    await lifecycle.drained(5_000);
  }
  delivery.closeAll();
  // The streams just told end on their own; a client that keeps a connection open is cut after a moment.
  await Promise.race([idle, Bun.sleep(2000)]);
  await server.stop(true);
  parts.pool.stop();
  parts.notary.stop();
  await opened.presence?.stop();
  await parts.embedded?.stop(0);
  parts.bridge.stop();
  await parts.hosts.stop();
  await opened.retention?.stop();
  await opened.store.close();
  parts.held.lock.release();
  parts.held.forgetFacts();
}
