import { cpus, totalmem } from "node:os";
import * as v from "valibot";
import { duration, flag, parseEnv, readFormerNames, wholeNumber } from "../../../config/env.ts";
import { AppError } from "../../../core/errors.ts";
import { tlsServerNameSchema } from "../../../core/schema.ts";
import type { SessionSizes } from "../../../core/session-sizes.ts";
import { type Engines, enginesText } from "../../../engine/host/placement.ts";
import { defaultPoolSize, maxPoolSize } from "./pool-policy.ts";
import { className, classesWithin } from "./size-classes.ts";

export interface PoolConfig {
  /** Warm sessions kept set up; 0 = no pool. */
  size: number;
  sizes: SessionSizes;
  hosts: string[];
  learnHosts: number;
  idleMs: number;
  /** Session size classes, smallest first; the limits are the largest. */
  classes: SessionSizes[];
  /** A GET whose answer overflowed its session is repeated once in a class that fits. */
  repeatTooLarge: boolean;
  /** Endpoints whose answer size is remembered (least recently used forgotten first). */
  learnEndpoints: number;
  /** Sessions that each have the engine's thread count in cores: refills run beside fewer sessions than this. */
  cpuSlots: number;
  /** Setups requests wait for at once; other requests without a warm session wait for their turn. */
  concurrentSetups: number;
  /** Exchanges with targets at once; other requests wait for their turn, holding their session, before connecting. */
  concurrentExchanges: number;
}

/**
 * Received 1.5, 6 and 16 KiB. 1.5 KiB rather than 1 KiB so that a 1 KB body with its headers (about 1.2 KB)
 * fits the smallest class; 6 KiB so that a 4 KB body with its headers and the learning margin (about 4.8 KB)
 * fits the middle one (with 4 KiB, such answers always fell to the largest class, which costs twice the setup).
 * Setup cost grows with the received limit (BENCHMARKS.md, "Sized sessions and the warm pool"). The sent limit
 * barely changes setup cost: each class allows a generous request.
 */
const DEFAULT_CLASSES = "1024/1536,2048/6144,4096/16384";
const sizeClass = v.pipe(
  v.string(),
  v.regex(/^\d{2,5}\/\d{2,5}$/, "must list classes as sent/recv bytes, e.g. 1024/4096"),
  v.transform((s) => {
    const [sent, recv] = s.split("/").map(Number) as [number, number];
    return { maxSentData: sent, maxRecvData: recv };
  }),
  v.check((c) => c.maxSentData >= 64 && c.maxRecvData >= 64, "must have at least 64 bytes each way"),
);

/**
 * How long a warm session may wait for a request, by default. Waiting costs no CPU; replacing a session costs a
 * whole setup, and a pool holding more sessions than its hosts ask for within this time replaces them for ever.
 * A remote notary ends sessions after its own timeout (30 min by default, TLSNotary's and ours), so its
 * sessions are replaced well before; the embedded notary's timeout follows this setting, so they are kept longer.
 */
const DEFAULT_IDLE_S = { remoteNotary: 600, embeddedNotary: 3600 };

const hostName = v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]+$/, "must list host names"), tlsServerNameSchema("must list host names"));

const PoolEnv = v.object({
  PROVER_POOL_SIZE: v.optional(wholeNumber(0, 64)),
  PROVER_POOL_HOSTS: v.optional(
    v.pipe(v.string(), v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)), v.array(hostName)),
    "",
  ),
  PROVER_POOL_LEARN_HOSTS: v.optional(wholeNumber(0, 64), "4"),
  PROVER_POOL_IDLE: v.optional(duration(1000, 24 * 3_600_000)),
  PROVER_POOL_IDLE_S: v.optional(wholeNumber(1, 24 * 3600)),
  PROVER_POOL_MAX_SENT_DATA: v.optional(wholeNumber(64, 32768)),
  PROVER_POOL_MAX_RECV_DATA: v.optional(wholeNumber(64, 65536)),
  PROVER_SIZE_CLASSES: v.optional(
    v.pipe(v.string(), v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)), v.minLength(1, "must list at least one class"), v.array(sizeClass)),
    DEFAULT_CLASSES,
  ),
  PROVER_REPEAT_TOO_LARGE: v.optional(flag(), "1"),
  PROVER_LEARN_ENDPOINTS: v.optional(wholeNumber(0, 1_000_000), "1000"),
  PROVER_CONCURRENT_SETUPS: v.optional(wholeNumber(1, 64)),
  PROVER_CONCURRENT_EXCHANGES: v.optional(wholeNumber(1, 64)),
});

/** The variables the pool reads, for the prover's check of unknown ones. */
export const POOL_VARIABLES: readonly string[] = Object.keys(PoolEnv.entries);
/** Their schemas, with their defaults (`prover start --help`). */
export const POOL_SETTINGS = PoolEnv.entries;
/** The pool's duration setting under its former name, a number of seconds (deprecated, still read). */
export const POOL_FORMER_NAMES = { PROVER_POOL_IDLE: { name: "PROVER_POOL_IDLE_S", unitMs: 1000 } } as const;

/**
 * The warm pool's and session sizing's settings. The default class (PROVER_POOL_MAX_*) defaults to the prover's
 * limits: it serves unseen endpoints whose answer cannot be repeated, and hosts not served yet. The pool size
 * defaults to what memory and cores allow.
 */
export function loadPoolConfig(
  env: Record<string, string | undefined>,
  limits: SessionSizes,
  engine: { threads: number } & Engines,
  /** Gets a line for each setting set under its former, deprecated name. */
  deprecated: string[] = [],
): PoolConfig {
  const e = parseEnv(PoolEnv, env);
  readFormerNames(env, e, POOL_FORMER_NAMES, deprecated);
  const sizes = {
    maxSentData: e.PROVER_POOL_MAX_SENT_DATA ?? limits.maxSentData,
    maxRecvData: e.PROVER_POOL_MAX_RECV_DATA ?? limits.maxRecvData,
  };
  if (sizes.maxSentData > limits.maxSentData || sizes.maxRecvData > limits.maxRecvData) {
    throw new AppError("config_invalid", "PROVER_POOL_MAX_*_DATA must not exceed PROVER_MAX_SENT_DATA / PROVER_MAX_RECV_DATA");
  }
  const classes = classesWithin(e.PROVER_SIZE_CLASSES, limits, [sizes]);
  // Counted in the smallest class: sessions of bigger ones are refilled only while they fit (pool.ts, refill).
  const ceiling = maxPoolSize(classes[0]!, limits, engine);
  if (e.PROVER_POOL_SIZE !== undefined && e.PROVER_POOL_SIZE > ceiling) {
    throw new AppError(
      "config_invalid",
      `PROVER_POOL_SIZE must be at most ${ceiling} (sessions of the smallest class, ${className(classes[0]!)}, beside a live one of the largest in ${enginesText(engine)})`,
    );
  }
  // A refill runs beside live sessions only when each gets threads' worth of cores of its own: sharing cores slows
  // the live exchange, in one engine (a TLS handshake slowed past the target's idle limit) and across engine hosts
  // alike (pool-policy.ts, mayRefill): an engine host of its own is not enough. On-demand setups and exchanges
  // share cores the same way (turn-gate.ts).
  const cpuSlots = Math.max(1, Math.floor(cpus().length / engine.threads));
  return {
    size: e.PROVER_POOL_SIZE ?? defaultPoolSize({ cores: cpus().length, totalMemoryBytes: totalmem() }, sizes, engine),
    sizes,
    hosts: [...new Set(e.PROVER_POOL_HOSTS)],
    learnHosts: e.PROVER_POOL_LEARN_HOSTS,
    idleMs: e.PROVER_POOL_IDLE ?? (engine.embeddedNotary ? DEFAULT_IDLE_S.embeddedNotary : DEFAULT_IDLE_S.remoteNotary) * 1000,
    classes,
    repeatTooLarge: e.PROVER_REPEAT_TOO_LARGE,
    learnEndpoints: e.PROVER_LEARN_ENDPOINTS,
    cpuSlots,
    // One more than the cores' thread pools hold: a session alone leaves part of the cores idle (on 2 cores it kept
    // 1.6-1.7 of them busy), so with requests always waiting two setups at once were ahead of one at a time in all
    // three alternated pairs measured (by 0.09-0.18 of bare sessions' rate); three or four at once cost more than
    // they gave (BENCHMARKS.md, "Two setups at once").
    concurrentSetups: e.PROVER_CONCURRENT_SETUPS ?? cpuSlots + 1,
    // In turns, the first of two warm requests arriving together is answered as if alone; together, each takes
    // 1.4-2.0 times that, and the two finish on average about when they do in turns (BENCHMARKS.md, warm requests
    // at once).
    concurrentExchanges: e.PROVER_CONCURRENT_EXCHANGES ?? cpuSlots,
  };
}
