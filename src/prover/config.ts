import { cpus, homedir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { AppError } from "../errors.ts";
import { parseEnv, wholeNumber } from "./env.ts";
import { type PoolConfig, loadPoolConfig } from "./pool-config.ts";
import { maxLiveSessions } from "./pool-policy.ts";
import { parseResolveList } from "./target.ts";

const flag = () =>
  v.pipe(
    v.picklist(["0", "1", "true", "false"], "must be 1, 0, true or false"),
    v.transform((s) => s === "1" || s === "true"),
  );
const list = v.pipe(
  v.string(),
  v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)),
);

/** The prover's environment; every variable is optional and validated. */
const ProverEnv = v.object({
  PROVER_HOST: v.optional(v.pipe(v.string(), v.minLength(1)), "127.0.0.1"),
  PROVER_PORT: v.optional(wholeNumber(0, 65535), "8080"),
  PROVER_NOTARY_URL: v.optional(v.pipe(v.string(), v.regex(/^https?:\/\/[^\s]+$/, "must be an http(s) URL"))),
  PROVER_NOTARY_API_KEY: v.optional(v.string()),
  PROVER_DATA_DIR: v.optional(v.string()),
  // Committing more than about 64 KB fails in this engine version, so the caps stay below it.
  PROVER_MAX_SENT_DATA: v.optional(wholeNumber(64, 32768), "4096"),
  PROVER_MAX_RECV_DATA: v.optional(wholeNumber(64, 65536), "16384"),
  PROVER_THREADS: v.optional(wholeNumber(1, 64)),
  PROVER_ALLOW_PRIVATE_TARGETS: v.optional(flag(), "0"),
  PROVER_ALLOWED_HOSTS: v.optional(list, ""),
  PROVER_RESOLVE: v.optional(v.string()),
  PROVER_STORE_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL"))),
  PROVER_PROOF_STREAM: v.optional(v.pipe(v.string(), v.minLength(1)), "proofs"),
  PROVER_MAX_BODY_BYTES: v.optional(wholeNumber(0, 64 * 1024 * 1024), String(1024 * 1024)),
  PROVER_CONNECT_TIMEOUT_MS: v.optional(wholeNumber(100, 600_000), "10000"),
  PROVER_RESPONSE_TIMEOUT_MS: v.optional(wholeNumber(100, 600_000), "30000"),
  PROVER_SESSION_TIMEOUT_MS: v.optional(wholeNumber(1000, 3_600_000), "300000"),
  PROVER_MAX_SESSIONS: v.optional(wholeNumber(1, 1024)),
  PROVER_SSE_PER_REQUEST: v.optional(wholeNumber(1, 100_000), "16"),
  PROVER_SSE_TOTAL: v.optional(wholeNumber(1, 1_000_000), "1024"),
  PROVER_API_KEYS: v.optional(list, ""),
  PROVER_SHUTDOWN_GRACE_S: v.optional(wholeNumber(0, 3600), "30"),
  TLSN_TEST_TRUST_ANCHOR: v.optional(v.string()),
  XDG_DATA_HOME: v.optional(v.string()),
});

export interface ProverConfig {
  host: string;
  port: number;
  notaryUrl?: string;
  notaryApiKey?: string;
  dataDir: string;
  maxSentData: number;
  maxRecvData: number;
  threads: number;
  allowPrivateTargets: boolean;
  allowedHosts: string[];
  resolve: Map<string, string>;
  storeUrl?: string;
  proofStream: string;
  maxBodyBytes: number;
  connectTimeoutMs: number;
  /** Longest silence from a target that owes an answer. */
  responseTimeoutMs: number;
  /** Longest a whole session (setup, exchange, proof) may take. */
  sessionTimeoutMs: number;
  maxSessions: number;
  sse: { perRequest: number; total: number };
  /** Keys for `Authorization: Bearer`; empty = no authentication. */
  apiKeys: string[];
  shutdownGraceMs: number;
  testTrustAnchorPath?: string;
  pool: PoolConfig;
}

export function loadProverConfig(env: Record<string, string | undefined>): ProverConfig {
  const e = parseEnv(ProverEnv, env);
  const limits = { maxSentData: e.PROVER_MAX_SENT_DATA, maxRecvData: e.PROVER_MAX_RECV_DATA };
  const pool = loadPoolConfig(env, limits);
  const liveCeiling = maxLiveSessions(pool, limits);
  if (e.PROVER_MAX_SESSIONS !== undefined && e.PROVER_MAX_SESSIONS > liveCeiling) {
    throw new AppError(
      "config_invalid",
      `PROVER_MAX_SESSIONS must be at most ${liveCeiling} with these session sizes and a warm pool of ${pool.size} (one engine's memory cannot pass 4 GiB)`,
    );
  }
  return {
    host: e.PROVER_HOST,
    port: e.PROVER_PORT,
    notaryUrl: e.PROVER_NOTARY_URL,
    notaryApiKey: e.PROVER_NOTARY_API_KEY,
    dataDir: e.PROVER_DATA_DIR ?? join(e.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "tlsproof"),
    maxSentData: e.PROVER_MAX_SENT_DATA,
    maxRecvData: e.PROVER_MAX_RECV_DATA,
    threads: e.PROVER_THREADS ?? Math.max(1, cpus().length),
    allowPrivateTargets: e.PROVER_ALLOW_PRIVATE_TARGETS,
    allowedHosts: e.PROVER_ALLOWED_HOSTS,
    resolve: parseResolveList(e.PROVER_RESOLVE),
    storeUrl: e.PROVER_STORE_URL,
    proofStream: e.PROVER_PROOF_STREAM,
    maxBodyBytes: e.PROVER_MAX_BODY_BYTES,
    connectTimeoutMs: e.PROVER_CONNECT_TIMEOUT_MS,
    responseTimeoutMs: e.PROVER_RESPONSE_TIMEOUT_MS,
    sessionTimeoutMs: e.PROVER_SESSION_TIMEOUT_MS,
    maxSessions: e.PROVER_MAX_SESSIONS ?? liveCeiling,
    sse: { perRequest: e.PROVER_SSE_PER_REQUEST, total: e.PROVER_SSE_TOTAL },
    apiKeys: e.PROVER_API_KEYS,
    shutdownGraceMs: e.PROVER_SHUTDOWN_GRACE_S * 1000,
    testTrustAnchorPath: e.TLSN_TEST_TRUST_ANCHOR,
    pool,
  };
}
