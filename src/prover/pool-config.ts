import { cpus, totalmem } from "node:os";
import * as v from "valibot";
import { AppError } from "../errors.ts";
import type { SessionSizes } from "./notary-client.ts";
import { defaultPoolSize, maxPoolSize } from "./pool-policy.ts";

export interface PoolConfig {
  /** Warm sessions kept set up; 0 = no pool. */
  size: number;
  sizes: SessionSizes;
  hosts: string[];
  learnHosts: number;
  idleMs: number;
}

const whole = (name: string, min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, `${name} must be a whole number`),
    v.transform(Number),
    v.minValue(min, `${name} must be at least ${min}`),
    v.maxValue(max, `${name} must be at most ${max}`),
  );
const hostName = v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]+$/, "PROVER_POOL_HOSTS must list host names"));

const PoolEnv = v.object({
  PROVER_POOL_SIZE: v.optional(whole("PROVER_POOL_SIZE", 0, 64)),
  PROVER_POOL_HOSTS: v.optional(
    v.pipe(v.string(), v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)), v.array(hostName)),
    "",
  ),
  PROVER_POOL_LEARN_HOSTS: v.optional(whole("PROVER_POOL_LEARN_HOSTS", 0, 64), "4"),
  // Well under the notary's session timeout (30 min for the embedded one and TLSNotary's default).
  PROVER_POOL_IDLE_S: v.optional(whole("PROVER_POOL_IDLE_S", 1, 24 * 3600), "600"),
  PROVER_POOL_MAX_SENT_DATA: v.optional(whole("PROVER_POOL_MAX_SENT_DATA", 64, 32768)),
  PROVER_POOL_MAX_RECV_DATA: v.optional(whole("PROVER_POOL_MAX_RECV_DATA", 64, 65536)),
});

/**
 * The warm pool's settings. Pool sessions default to the prover's limits; smaller ones set up faster and
 * requests that announce more get an on-demand session. The size defaults to what memory and cores allow.
 */
export function loadPoolConfig(env: Record<string, string | undefined>, limits: SessionSizes): PoolConfig {
  const known = Object.fromEntries(Object.keys(PoolEnv.entries).flatMap((k) => (env[k] !== undefined ? [[k, env[k]]] : [])));
  const parsed = v.safeParse(PoolEnv, known);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    throw new AppError("config_invalid", `${issue ? v.getDotPath(issue) : "environment"}: ${issue?.message ?? "invalid"}`);
  }
  const e = parsed.output;
  const sizes = {
    maxSentData: e.PROVER_POOL_MAX_SENT_DATA ?? limits.maxSentData,
    maxRecvData: e.PROVER_POOL_MAX_RECV_DATA ?? limits.maxRecvData,
  };
  if (sizes.maxSentData > limits.maxSentData || sizes.maxRecvData > limits.maxRecvData) {
    throw new AppError("config_invalid", "PROVER_POOL_MAX_*_DATA must not exceed PROVER_MAX_SENT_DATA / PROVER_MAX_RECV_DATA");
  }
  const ceiling = maxPoolSize(sizes);
  if (e.PROVER_POOL_SIZE !== undefined && e.PROVER_POOL_SIZE > ceiling) {
    throw new AppError("config_invalid", `PROVER_POOL_SIZE must be at most ${ceiling} for these session sizes (one engine's memory cannot pass 4 GiB)`);
  }
  return {
    size: e.PROVER_POOL_SIZE ?? defaultPoolSize({ cores: cpus().length, totalMemoryBytes: totalmem() }, sizes),
    sizes,
    hosts: [...new Set(e.PROVER_POOL_HOSTS)],
    learnHosts: e.PROVER_POOL_LEARN_HOSTS,
    idleMs: e.PROVER_POOL_IDLE_S * 1000,
  };
}
