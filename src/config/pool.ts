import { cpus, totalmem } from "node:os";
import * as v from "valibot";
import { parseEnv, wholeNumber } from "./env.ts";
import { AppError } from "../errors.ts";
import type { SessionSizes } from "../protocol/notary.ts";
import { defaultPoolSize, maxPoolSize } from "../prover/pool-policy.ts";

export interface PoolConfig {
  /** Warm sessions kept set up; 0 = no pool. */
  size: number;
  sizes: SessionSizes;
  hosts: string[];
  learnHosts: number;
  idleMs: number;
}

const hostName = v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]+$/, "must list host names"));

const PoolEnv = v.object({
  PROVER_POOL_SIZE: v.optional(wholeNumber(0, 64)),
  PROVER_POOL_HOSTS: v.optional(
    v.pipe(v.string(), v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)), v.array(hostName)),
    "",
  ),
  PROVER_POOL_LEARN_HOSTS: v.optional(wholeNumber(0, 64), "4"),
  // Well under the notary's session timeout (30 min for the embedded one and TLSNotary's default).
  PROVER_POOL_IDLE_S: v.optional(wholeNumber(1, 24 * 3600), "600"),
  PROVER_POOL_MAX_SENT_DATA: v.optional(wholeNumber(64, 32768)),
  PROVER_POOL_MAX_RECV_DATA: v.optional(wholeNumber(64, 65536)),
});

/**
 * The warm pool's settings. Pool sessions default to the prover's limits; smaller ones set up faster and
 * requests that announce more get an on-demand session. The size defaults to what memory and cores allow.
 */
export function loadPoolConfig(env: Record<string, string | undefined>, limits: SessionSizes): PoolConfig {
  const e = parseEnv(PoolEnv, env);
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
