/**
 * The prover's settings: every PROVER_* variable (and LOG_FORMAT, TLSN_TEST_TRUST_ANCHOR) validated here,
 * and handed out grouped by the part of the prover that uses them. A bad value is one config_invalid line
 * naming the variable (exit 2). docs/prover.md, "Prover configuration", documents each one.
 */
import { cpus, homedir, totalmem } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import type { LogFormat, LogLevel } from "../base/log.ts";
import type { SessionSizes } from "../core/session-sizes.ts";
import { defaultHostCount, enginesText } from "../engine/host/placement.ts";
import { maxLiveSessions } from "./mpc/pool/pool-policy.ts";
import { type TargetPolicy, parseResolveList } from "../core/target-policy.ts";
import { refuseExposedTestAnchor } from "../core/test-anchor-exposure.ts";
import { IDENTIFYING_HEADERS, droppedIdentifyingHeaders } from "./exchange/identifying-headers.ts";
import { duration, flag, list, oneOfAnyCase, parseEnv, readFormerNames, refuseUnknownVariables, wholeNumber } from "../config/env.ts";
import {
  NOTARY_CONNECT_TIMEOUT_S,
  PROXY_ATTESTATION_WINDOW_S,
  PROXY_MAX_HIDDEN_SPAN,
  PROXY_MAX_HIDDEN_SPAN_LIMIT,
  PROXY_MAX_RECV_DATA,
  PROXY_SESSION_TIMEOUT_S,
  type ProxyLimits,
  type SessionLimits,
} from "../protocol/limits.ts";
import type { ProofMode } from "../proof/format.ts";
import { BUILT_IN_MODES } from "../proof/modes.ts";
import { POOL_FORMER_NAMES, POOL_SETTINGS, POOL_VARIABLES, type PoolConfig, loadPoolConfig } from "./mpc/pool/config.ts";
import type { DeliveryOptions } from "./delivery/proof-delivery.ts";
import type { ApiKeys } from "./auth.ts";
import type { ProofHubOptions } from "./delivery/proof-hub.ts";
import { storeUrlSchema } from "../store/url.ts";
import type { QueryPlaceLimits } from "../store/query-places.ts";
import type { PublishQuotaLimits } from "../store/publish-quota.ts";
import { type PublicKey, readPublicKeysFile } from "../proof/keys.ts";
import { MAX_QUORUM } from "../proof/quorum.ts";

const port = wholeNumber(1, 65535);
/**
 * Answer bytes proxy proofs may hold at once by default: 16 answers of the default 4 MiB limit, or more of the
 * sizes clients announce. A proof holds several copies of its answer until it is made (its TLS records, the
 * plaintext, the proof's base64, its stored texts): `bun scripts/bench-proxy-memory.ts` measures the prover's
 * memory under it (BENCHMARKS.md).
 */
const DEFAULT_PROXY_INFLIGHT_BYTES = 64 * 1024 * 1024;

/** Every duration setting is a duration (`250ms`, `30s`, `5m`); these are the former names, a number of one unit. */
const FORMER_NAMES = {
  PROVER_ENGINE_HANG: { name: "PROVER_ENGINE_HANG_S", unitMs: 1000 },
  PROVER_SETUP_STALL: { name: "PROVER_SETUP_STALL_S", unitMs: 1000 },
  PROVER_INSTANCE_TIMEOUT: { name: "PROVER_INSTANCE_TIMEOUT_S", unitMs: 1000 },
  PROVER_PROXY_SESSION_TIMEOUT: { name: "PROVER_PROXY_SESSION_TIMEOUT_S", unitMs: 1000 },
  PROVER_CONNECT_TIMEOUT: { name: "PROVER_CONNECT_TIMEOUT_MS", unitMs: 1 },
  PROVER_RESPONSE_TIMEOUT: { name: "PROVER_RESPONSE_TIMEOUT_MS", unitMs: 1 },
  PROVER_SESSION_TIMEOUT: { name: "PROVER_SESSION_TIMEOUT_MS", unitMs: 1 },
  PROVER_SHUTDOWN_GRACE: { name: "PROVER_SHUTDOWN_GRACE_S", unitMs: 1000 },
  PROVER_IDLE_TIMEOUT: { name: "PROVER_IDLE_TIMEOUT_S", unitMs: 1000 },
  PROVER_PROOF_RETENTION: { name: "PROVER_PROOF_RETENTION_S", unitMs: 1000 },
  PROVER_UNKNOWN_REQUEST_TIMEOUT: { name: "PROVER_UNKNOWN_REQUEST_TIMEOUT_S", unitMs: 1000 },
} as const;

/** The prover's environment; every variable is optional and validated. */
const ProverEnv = v.object({
  PROVER_HOST: v.optional(v.pipe(v.string(), v.minLength(1)), "127.0.0.1"),
  PROVER_PORT: v.optional(wholeNumber(0, 65535), "8080"),
  PROVER_NOTARY_URL: v.optional(v.pipe(list, v.minLength(1), v.array(v.pipe(v.string(), v.regex(/^https?:\/\/[^\s,]+$/, "must be an http(s) URL, or a comma list of them"))))),
  PROVER_NOTARY_API_KEY: v.optional(v.string()),
  PROVER_NOTARY_KEYS: v.optional(list, ""),
  PROVER_NOTARY_QUORUM: v.optional(wholeNumber(1, MAX_QUORUM), "1"),
  PROVER_DATA_DIR: v.optional(v.string()),
  // Committing more than about 64 KB fails in this engine version, so the caps stay below it.
  PROVER_MAX_SENT_DATA: v.optional(wholeNumber(64, 32768), "4096"),
  PROVER_MAX_RECV_DATA: v.optional(wholeNumber(64, 65536), "16384"),
  PROVER_THREADS: v.optional(wholeNumber(1, 64)),
  PROVER_ENGINE_HOSTS: v.optional(wholeNumber(1, 64)),
  PROVER_ENGINE_HANG: v.optional(duration(1000, 3_600_000), "15s"),
  PROVER_ENGINE_HANG_S: v.optional(wholeNumber(1, 3600)),
  PROVER_SETUP_STALL: v.optional(duration(5000, 3_600_000), "60s"),
  PROVER_SETUP_STALL_S: v.optional(wholeNumber(5, 3600)),
  PROVER_PAUSE_REFILLS: v.optional(flag(), "1"),
  PROVER_ALLOW_PRIVATE_TARGETS: v.optional(flag(), "0"),
  PROVER_ALLOWED_HOSTS: v.optional(list, ""),
  PROVER_ALLOWED_PORTS: v.optional(
    v.union([v.pipe(v.literal("*"), v.transform(() => [])), v.pipe(list, v.minLength(1), v.array(port))], "must be a comma list of ports (1-65535) or *"),
    "443,8443",
  ),
  PROVER_RESOLVE: v.optional(v.string()),
  PROVER_FORWARD_HEADERS: v.optional(
    v.pipe(
      list,
      v.transform((names) => names.map((name) => name.toLowerCase())),
      v.check(
        (names) => names.every((name) => IDENTIFYING_HEADERS.includes(name)),
        `must name only headers the prover drops by default: ${IDENTIFYING_HEADERS.join(", ")}`,
      ),
    ),
    "",
  ),
  PROVER_STORE_URL: v.optional(storeUrlSchema),
  PROVER_INSTANCE_TIMEOUT: v.optional(duration(3000, 3_600_000), "10s"),
  PROVER_INSTANCE_TIMEOUT_S: v.optional(wholeNumber(3, 3600)),
  PROVER_PROOF_STREAM: v.optional(v.pipe(v.string(), v.minLength(1)), "proofs"),
  PROVER_PUBLIC_PROOFS: v.optional(flag(), "0"),
  PROVER_STORE_STREAMS: v.optional(wholeNumber(1, 100_000), "32"),
  PROVER_STORE_QUERIES: v.optional(wholeNumber(1, 100_000), "16"),
  PROVER_STORE_PER_CLIENT: v.optional(wholeNumber(1, 100_000), "8"),
  PROVER_STORE_PUBLISH_BYTES_PER_MIN: v.optional(wholeNumber(1, Number.MAX_SAFE_INTEGER), String(256 * 1024 * 1024)),
  PROVER_STORE_STREAM_BYTES: v.optional(wholeNumber(1, Number.MAX_SAFE_INTEGER), String(4 * 1024 * 1024 * 1024)),
  // Unset: messages of other streams are kept for ever (within PROVER_STORE_STREAM_BYTES each).
  PROVER_STORE_MESSAGE_RETENTION: v.optional(duration(60_000)),
  // Unset: proofs are kept for ever. A minute at least: an outcome must outlive its delivery.
  PROVER_STORE_RETENTION: v.optional(duration(60_000)),
  PROVER_MAX_BODY_BYTES: v.optional(wholeNumber(0, 64 * 1024 * 1024), String(1024 * 1024)),
  PROVER_PROOF_MODE: v.optional(oneOfAnyCase(Object.keys(BUILT_IN_MODES)), "mpc"),
  PROVER_PROXY_MAX_RECV_DATA: v.optional(wholeNumber(64, 64 * 1024 * 1024), String(PROXY_MAX_RECV_DATA)),
  PROVER_PROXY_MAX_SESSIONS: v.optional(wholeNumber(1, 4096), "64"),
  PROVER_PROXY_SESSION_TIMEOUT: v.optional(duration(1000, 3_600_000), `${PROXY_SESSION_TIMEOUT_S}s`),
  PROVER_PROXY_SESSION_TIMEOUT_S: v.optional(wholeNumber(1, 3600)),
  PROVER_PROXY_INFLIGHT_BYTES: v.optional(wholeNumber(64, 2 ** 40), String(DEFAULT_PROXY_INFLIGHT_BYTES)),
  PROVER_PROXY_MAX_HIDDEN_SPAN: v.optional(wholeNumber(1, PROXY_MAX_HIDDEN_SPAN_LIMIT), String(PROXY_MAX_HIDDEN_SPAN)),
  PROVER_CONNECT_TIMEOUT: v.optional(duration(100, 600_000), "10s"),
  PROVER_CONNECT_TIMEOUT_MS: v.optional(wholeNumber(100, 600_000)),
  PROVER_RESPONSE_TIMEOUT: v.optional(duration(100, 600_000), "30s"),
  PROVER_RESPONSE_TIMEOUT_MS: v.optional(wholeNumber(100, 600_000)),
  PROVER_SESSION_TIMEOUT: v.optional(duration(1000, 3_600_000), "300s"),
  PROVER_SESSION_TIMEOUT_MS: v.optional(wholeNumber(1000, 3_600_000)),
  PROVER_MAX_SESSIONS: v.optional(wholeNumber(1, 1024)),
  PROVER_SSE_PER_REQUEST: v.optional(wholeNumber(1, 100_000), "16"),
  PROVER_SSE_TOTAL: v.optional(wholeNumber(1, 1_000_000), "1024"),
  PROVER_SSE_PER_CLIENT: v.optional(wholeNumber(1, 1_000_000), "64"),
  PROVER_API_KEYS: v.optional(list, ""),
  PROVER_API_KEYS_SCOPED: v.optional(list, ""),
  PROVER_CORS_ORIGINS: v.optional(
    v.pipe(list, v.array(v.pipe(v.string(), v.regex(/^https?:\/\/[^/\s?#]+$/, "must be origins as browsers send them, e.g. https://app.example.com (scheme, host, port; no path)")))),
    "",
  ),
  PROVER_SHUTDOWN_GRACE: v.optional(duration(0, 3_600_000), "30s"),
  PROVER_SHUTDOWN_GRACE_S: v.optional(wholeNumber(0, 3600)),
  PROVER_IDLE_TIMEOUT: v.optional(duration(3000, 255_000, true), "60s"),
  PROVER_IDLE_TIMEOUT_S: v.optional(wholeNumber(3, 255)),
  PROVER_PROOF_RETENTION: v.optional(duration(0, 86_400_000), "600s"),
  PROVER_PROOF_RETENTION_S: v.optional(wholeNumber(0, 86_400)),
  // A client subscribes just before its /proxy call: an id nobody uses holds its place seconds, not minutes.
  PROVER_UNKNOWN_REQUEST_TIMEOUT: v.optional(duration(1000, 86_400_000), "30s"),
  PROVER_UNKNOWN_REQUEST_TIMEOUT_S: v.optional(wholeNumber(1, 86_400)),
  TLSN_TEST_TRUST_ANCHOR: v.optional(v.string()),
  TLSN_TEST_TRUST_ANCHOR_EXPOSED: v.optional(flag(), "0"),
  LOG_FORMAT: v.optional(oneOfAnyCase(["compact", "json"]), "compact"),
  PROVER_LOG_LEVEL: v.optional(oneOfAnyCase(["trace", "debug", "info", "warn", "error"]), "info"),
  XDG_DATA_HOME: v.optional(v.string()),
});

/**
 * Proof streams write a comment this often: well under PROVER_IDLE_TIMEOUT (a third of it at most) and the
 * usual 60 s of proxies. /proxy is exempt from the idle limit once its MPC session starts.
 */
const SSE_HEARTBEAT_MS = 10_000;
/**
 * Bun refuses bodies beyond its own limit with a bare 413; this much above PROVER_MAX_BODY_BYTES it lets
 * the body through so the proxy answers its own JSON `payload_too_large`.
 */
const BODY_LIMIT_SLACK_BYTES = 64 * 1024;
/**
 * Most bytes of outcomes kept in memory for late subscribers (a proof is about 4/3 of its revealed bytes plus
 * 1 KB: ~2 KB for a proxy proof of a small answer, so about 2,000 of them, some ten seconds at the sustained rate;
 * ~28 KB at the default MPC sizes 4096/16384, so about 150; ~1.4 MB for a proxy proof of a 1 MB answer, so 2).
 * Older and larger ones are read from the store when asked. 32 MiB held some 16,000 small proxy proofs: the
 * prover's memory still grew after 10,000 proofs (BENCHMARKS.md, "the soak on today's code").
 */
const PROOF_RETAINED_BYTES = 4 * 1024 * 1024;
/** How often a subscriber to an id not in flight here asks the store (another prover may settle it). */
const PROOF_STORE_POLL_MS = 5_000;
/**
 * With PostgreSQL, a NOTIFY wakes subscribers when another prover settles their id: asking the store is
 * then only a safety net (a notification lost while the listening connection reconnects).
 */
const PROOF_STORE_RECHECK_MS = 30_000;
/** How deploy/'s example files mark the keys an operator must replace. */
const EXAMPLE_KEY_PREFIX = "CHANGE-ME";
/**
 * The embedded notary serves only this prover, whose sessions are bounded by the warm pool and
 * PROVER_MAX_SESSIONS (both far below this); the cap only guards against leaked sessions.
 */
const EMBEDDED_NOTARY_CONCURRENCY = 64;
/** A proxy-mode request's head beside its body: headers the client forwards are bounded by this much. */
const PROXY_REQUEST_HEAD_BYTES = 64 * 1024;
/**
 * The embedded notary ends a relay silent this much longer than PROVER_RESPONSE_TIMEOUT: the prover's own
 * `target_timeout` comes first for a silent target, the notary's limit only ends a relay its prover forgot.
 */
const EMBEDDED_RELAY_IDLE_MARGIN_MS = 5_000;

export interface ProverConfig {
  listen: { host: string; port: number; idleTimeoutS: number; maxRequestBodyBytes: number; shutdownGraceMs: number };
  engine: {
    threads: number;
    /** Engine host processes: each its own wasm instance. */
    hosts: number;
    /** How long an abandoned engine call may take to end before its host is replaced. */
    hangMs: number;
    /** A setup whose MPC socket is quiet both ways this long (engine running time) is given up and may be retried. */
    setupStallMs: number;
    /** Hosts running only refills are paused while a request's exchange runs in another (embedded notary only). */
    pauseRefills: boolean;
    testTrustAnchorPath?: string;
  };
  /** Keys, the SQLite store and the embedded notary's key live here. */
  dataDir: string;
  /** The largest session any request may use; the embedded notary's limits too. */
  sessionLimits: SessionSizes;
  /**
   * Remote notaries (`urls`: sessions are spread over the healthy ones) and the keys their proofs must be
   * signed with (`pinnedKeys`; empty: each notary's key at first contact), or the embedded one's session limits.
   */
  /** `quorum`: the distinct notaries a call's proof needs unless its T-QUORUM says otherwise (PROVER_NOTARY_QUORUM). */
  notary: { urls: string[]; apiKey?: string; pinnedKeys: PublicKey[]; quorum: number; embedded: SessionLimits };
  proxy: {
    policy: TargetPolicy;
    maxBodyBytes: number;
    connectTimeoutMs: number;
    /** Longest silence from a target that owes an answer. */
    responseTimeoutMs: number;
    /** Longest a whole session (setup, exchange, proof) may take. */
    sessionTimeoutMs: number;
    /** Live MPC sessions at once. */
    maxSessions: number;
    /** Headers that identify the end user, not forwarded to targets. */
    identifyingHeaders: ReadonlySet<string>;
  };
  /** Proxy mode (T-PROOF-MODE: proxy): the default mode and its own bounds. */
  proxyMode: {
    defaultMode: ProofMode;
    /** Most answer bytes a proxy proof may carry. */
    maxRecvData: number;
    /** Proxy proofs at once. */
    maxSessions: number;
    /** Answer bytes proxy proofs may hold at once: each reserves its largest allowed answer. */
    inFlightBytes: number;
    /** Most bytes of one hidden value of a request written in epochs (the embedded notary's bound too). */
    maxHiddenSpanBytes: number;
    /** What the embedded notary offers: the prover's own target policy and these sizes. */
    embedded: ProxyLimits;
  };
  pool: PoolConfig;
  store: {
    url?: string;
    proofStream: string;
    /** With API keys on, the proofs stream is readable without a key. */
    publicProofs: boolean;
    /** Store answers at once: plain ones, streamed ones (SSE), and either kind per client. */
    places: QueryPlaceLimits;
    /** What a caller may publish in a minute and a stream may hold. */
    publishQuota: PublishQuotaLimits;
    /** Messages of every stream but the proofs stream older than this are deleted; undefined: kept for ever. */
    messageRetentionMs?: number;
    /**
     * PostgreSQL: an instance whose heartbeat is older than this is dead; a live one settles its pending
     * ids. Heartbeats and sweeps run every third of it.
     */
    instanceTimeoutMs: number;
    /** Proofs and outcome records older than this are pruned (src/store/retention.ts); undefined: kept for ever. */
    retentionMs?: number;
  };
  /** Keys for `Authorization: Bearer`, full and scoped (own requests' proofs only); none = no authentication. */
  auth: ApiKeys;
  /** Origins whose pages may call the prover from a browser (CORS); empty = none. */
  corsOrigins: string[];
  sse: { perRequest: number; perClient: number; total: number; heartbeatMs: number };
  /** Proof outcomes: in memory (ProofHub) and from the store (ProofDelivery). */
  delivery: ProofHubOptions & DeliveryOptions;
  log: { format: LogFormat; level: LogLevel };
  /** One line for each setting set under its former, deprecated name: the prover logs each once, at start. */
  deprecated: string[];
}

/** PROVER_NOTARY_KEYS: PEM files, each holding one or more notary public keys. */
function pinnedNotaryKeys(paths: readonly string[], remote: boolean): PublicKey[] {
  if (paths.length > 0 && !remote) throw new AppError("config_invalid", "PROVER_NOTARY_KEYS pins remote notaries' keys: set PROVER_NOTARY_URL too");
  try {
    return paths.flatMap(readPublicKeysFile);
  } catch (error) {
    throw error instanceof AppError ? new AppError("config_invalid", `PROVER_NOTARY_KEYS: ${error.message}`) : error;
  }
}

/**
 * Every PROVER_* name the prover accepts: its own, the pool's, and the test suite's database URL (read by the
 * tests, never by the prover, and often exported in the shell that starts both).
 */
export const PROVER_VARIABLES = [...Object.keys(ProverEnv.entries).filter((name) => name.startsWith("PROVER_")), ...POOL_VARIABLES, "PROVER_TEST_PG_URL"];

/**
 * Each PROVER_* setting the prover reads, with its default as written in the environment (undefined: none). Former
 * names are read but not listed: help offers what to set, docs/prover.md what an older configuration meant.
 */
export function proverSettings(): { name: string; default: string | undefined }[] {
  const schemas = { ...ProverEnv.entries, ...POOL_SETTINGS } as Record<string, { default?: unknown }>;
  const former = new Set<string>([...Object.values(FORMER_NAMES), ...Object.values(POOL_FORMER_NAMES)].map((was) => was.name));
  return Object.entries(schemas)
    .filter(([name]) => name.startsWith("PROVER_") && !former.has(name))
    .map(([name, schema]) => ({ name, default: typeof schema.default === "string" ? schema.default : undefined }));
}

type ProverEnvValues = v.InferOutput<typeof ProverEnv>;

/** Settings that each parse but do not hold together, or that hold what must not run: refused naming the one to change. */
function refuseInconsistent(e: ProverEnvValues): void {
  if (e.PROVER_PROXY_INFLIGHT_BYTES < e.PROVER_PROXY_MAX_RECV_DATA) {
    throw new AppError("config_invalid", `PROVER_PROXY_INFLIGHT_BYTES must be at least PROVER_PROXY_MAX_RECV_DATA (${e.PROVER_PROXY_MAX_RECV_DATA}): the largest answer must fit`);
  }
  // deploy/'s example values: a prover must not run with keys everyone can read in the repository.
  for (const [name, keys] of [["PROVER_API_KEYS", e.PROVER_API_KEYS], ["PROVER_API_KEYS_SCOPED", e.PROVER_API_KEYS_SCOPED], ["PROVER_NOTARY_API_KEY", [e.PROVER_NOTARY_API_KEY ?? ""]]] as const) {
    if (keys.some((key) => key.startsWith(EXAMPLE_KEY_PREFIX))) throw new AppError("config_invalid", `${name}: replace the example's ${EXAMPLE_KEY_PREFIX}… value with a key of your own`);
  }
  const notaries = e.PROVER_NOTARY_URL?.length ?? 1;
  if (e.PROVER_NOTARY_QUORUM > notaries) {
    throw new AppError("config_invalid", `PROVER_NOTARY_QUORUM ${e.PROVER_NOTARY_QUORUM} needs as many notaries; ${e.PROVER_NOTARY_URL ? `PROVER_NOTARY_URL lists ${notaries}` : "the embedded notary is one (set PROVER_NOTARY_URL)"}`);
  }
  if (e.PROVER_API_KEYS_SCOPED.some((key) => e.PROVER_API_KEYS.includes(key))) {
    throw new AppError("config_invalid", "PROVER_API_KEYS_SCOPED: a key is also in PROVER_API_KEYS; list each key once");
  }
}

/** Proxy mode's settings: the default mode, its bounds, and what the embedded notary offers under the prover's policy. */
function proxyModeConfig(e: ProverEnvValues, targetPolicy: TargetPolicy): ProverConfig["proxyMode"] {
  return {
    defaultMode: e.PROVER_PROOF_MODE,
    maxRecvData: e.PROVER_PROXY_MAX_RECV_DATA,
    maxSessions: e.PROVER_PROXY_MAX_SESSIONS,
    inFlightBytes: e.PROVER_PROXY_INFLIGHT_BYTES,
    maxHiddenSpanBytes: e.PROVER_PROXY_MAX_HIDDEN_SPAN,
    embedded: {
      policy: targetPolicy,
      maxSentData: e.PROVER_MAX_BODY_BYTES + PROXY_REQUEST_HEAD_BYTES,
      maxRecvData: e.PROVER_PROXY_MAX_RECV_DATA,
      sessionTimeoutMs: e.PROVER_PROXY_SESSION_TIMEOUT,
      idleTimeoutMs: e.PROVER_RESPONSE_TIMEOUT + EMBEDDED_RELAY_IDLE_MARGIN_MS,
      connectTimeoutMs: e.PROVER_CONNECT_TIMEOUT,
      // Its one client, this prover, bounds its proxy sessions itself (PROVER_PROXY_MAX_SESSIONS).
      maxPendingConnects: EMBEDDED_NOTARY_CONCURRENCY,
      attestationWindowMs: PROXY_ATTESTATION_WINDOW_S * 1000,
      maxHiddenSpanBytes: e.PROVER_PROXY_MAX_HIDDEN_SPAN,
    },
  };
}

/** The prover's data folder: PROVER_DATA_DIR, else tlsproof under XDG_DATA_HOME or ~/.local/share. */
export function dataDirOf(env: Record<string, string | undefined>): string {
  return env.PROVER_DATA_DIR ?? join(env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "tlsproof");
}

/** The message store's settings, and how proofs reach their subscribers. */
function storeAndDelivery(e: ProverEnvValues): Pick<ProverConfig, "store" | "sse" | "delivery"> {
  return {
    store: {
      url: e.PROVER_STORE_URL,
      proofStream: e.PROVER_PROOF_STREAM,
      publicProofs: e.PROVER_PUBLIC_PROOFS,
      places: { pages: e.PROVER_STORE_QUERIES, streams: e.PROVER_STORE_STREAMS, perClient: e.PROVER_STORE_PER_CLIENT },
      publishQuota: { callerBytesPerMinute: e.PROVER_STORE_PUBLISH_BYTES_PER_MIN, streamBytes: e.PROVER_STORE_STREAM_BYTES },
      messageRetentionMs: e.PROVER_STORE_MESSAGE_RETENTION,
      instanceTimeoutMs: e.PROVER_INSTANCE_TIMEOUT,
      retentionMs: e.PROVER_STORE_RETENTION,
    },
    sse: {
      perRequest: e.PROVER_SSE_PER_REQUEST,
      perClient: e.PROVER_SSE_PER_CLIENT,
      total: e.PROVER_SSE_TOTAL,
      heartbeatMs: Math.min(SSE_HEARTBEAT_MS, e.PROVER_IDLE_TIMEOUT / 3),
    },
    delivery: {
      retentionMs: e.PROVER_PROOF_RETENTION,
      maxRetainedBytes: PROOF_RETAINED_BYTES,
      unknownRequestMs: e.PROVER_UNKNOWN_REQUEST_TIMEOUT,
      storePollMs: e.PROVER_STORE_URL ? PROOF_STORE_RECHECK_MS : PROOF_STORE_POLL_MS,
    },
  };
}

/** The most live MPC sessions the engine hosts hold at these sizes; a PROVER_MAX_SESSIONS above it is refused. */
function liveSessionCeiling(asked: number | undefined, sessionLimits: SessionSizes, engines: Parameters<typeof maxLiveSessions>[1]): number {
  const ceiling = maxLiveSessions(sessionLimits, engines);
  if (asked !== undefined && asked > ceiling) {
    throw new AppError("config_invalid", `PROVER_MAX_SESSIONS must be at most ${ceiling} with these session sizes (${enginesText(engines)})`);
  }
  return ceiling;
}

export function loadProverConfig(env: Record<string, string | undefined>): ProverConfig {
  refuseUnknownVariables(env, "PROVER_", PROVER_VARIABLES);
  const e = parseEnv(ProverEnv, env);
  const deprecated: string[] = [];
  readFormerNames(env, e, FORMER_NAMES, deprecated);
  const sessionLimits = { maxSentData: e.PROVER_MAX_SENT_DATA, maxRecvData: e.PROVER_MAX_RECV_DATA };
  const threads = e.PROVER_THREADS ?? Math.max(1, cpus().length);
  const embeddedNotary = e.PROVER_NOTARY_URL === undefined;
  const hosts = e.PROVER_ENGINE_HOSTS ?? defaultHostCount({ cores: cpus().length, totalMemoryBytes: totalmem() }, embeddedNotary);
  const engines = { hosts, embeddedNotary };
  const pool = loadPoolConfig(env, sessionLimits, { threads, ...engines }, deprecated);
  const liveCeiling = liveSessionCeiling(e.PROVER_MAX_SESSIONS, sessionLimits, engines);
  const sessionTimeoutMs = e.PROVER_SESSION_TIMEOUT;
  refuseInconsistent(e);
  refuseExposedTestAnchor({
    role: "prover",
    host: e.PROVER_HOST,
    hostSetting: "PROVER_HOST",
    testTrustAnchorPath: e.TLSN_TEST_TRUST_ANCHOR,
    allowed: e.TLSN_TEST_TRUST_ANCHOR_EXPOSED,
  });
  const targetPolicy: TargetPolicy = {
    allowPrivateTargets: e.PROVER_ALLOW_PRIVATE_TARGETS,
    resolve: parseResolveList(e.PROVER_RESOLVE),
    allowedHosts: e.PROVER_ALLOWED_HOSTS,
    allowedPorts: e.PROVER_ALLOWED_PORTS,
  };
  return {
    ...storeAndDelivery(e),
    listen: {
      host: e.PROVER_HOST,
      port: e.PROVER_PORT,
      idleTimeoutS: e.PROVER_IDLE_TIMEOUT / 1000,
      maxRequestBodyBytes: e.PROVER_MAX_BODY_BYTES + BODY_LIMIT_SLACK_BYTES,
      shutdownGraceMs: e.PROVER_SHUTDOWN_GRACE,
    },
    engine: {
      threads,
      hosts,
      hangMs: e.PROVER_ENGINE_HANG,
      setupStallMs: e.PROVER_SETUP_STALL,
      pauseRefills: e.PROVER_PAUSE_REFILLS,
      testTrustAnchorPath: e.TLSN_TEST_TRUST_ANCHOR,
    },
    dataDir: dataDirOf({ PROVER_DATA_DIR: e.PROVER_DATA_DIR, XDG_DATA_HOME: e.XDG_DATA_HOME }),
    sessionLimits,
    notary: {
      urls: e.PROVER_NOTARY_URL ?? [],
      apiKey: e.PROVER_NOTARY_API_KEY,
      pinnedKeys: pinnedNotaryKeys(e.PROVER_NOTARY_KEYS, !embeddedNotary),
      quorum: e.PROVER_NOTARY_QUORUM,
      embedded: {
        concurrency: EMBEDDED_NOTARY_CONCURRENCY,
        ...sessionLimits,
        // A warm session sets up (less than a session's time), idles up to the pool's idle time, then runs.
        timeoutMs: pool.idleMs + 2 * sessionTimeoutMs,
        connectTimeoutMs: NOTARY_CONNECT_TIMEOUT_S * 1000,
      },
    },
    proxy: {
      policy: targetPolicy,
      maxBodyBytes: e.PROVER_MAX_BODY_BYTES,
      connectTimeoutMs: e.PROVER_CONNECT_TIMEOUT,
      responseTimeoutMs: e.PROVER_RESPONSE_TIMEOUT,
      sessionTimeoutMs,
      maxSessions: e.PROVER_MAX_SESSIONS ?? liveCeiling,
      identifyingHeaders: droppedIdentifyingHeaders(e.PROVER_FORWARD_HEADERS),
    },
    proxyMode: proxyModeConfig(e, targetPolicy),
    pool,
    auth: { full: e.PROVER_API_KEYS, scoped: e.PROVER_API_KEYS_SCOPED },
    corsOrigins: e.PROVER_CORS_ORIGINS,
    log: { format: e.LOG_FORMAT, level: e.PROVER_LOG_LEVEL },
    deprecated,
  };
}
