import type { SessionSizes } from "../protocol/notary.ts";

/**
 * Pure decisions of the warm pool: how many sessions the machine can hold, which hosts get them, how
 * long to wait after a failure. No timers or engine here, so they are tested without MPC.
 */

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/**
 * Engine (wasm) memory one set-up session holds, prover and embedded notary side together (one instance),
 * as measured with tlsn-wasm alpha.12 (BENCHMARKS.md, "Proof pipeline"): 574 MiB more per session at
 * 1024/4096 bytes, 1281 MiB at 4096/16384. Freed sessions' memory is reused, but the instance never shrinks.
 */
export function sessionEngineBytes(sizes: SessionSizes): number {
  return 345 * MiB + (sizes.maxSentData + sizes.maxRecvData) * 47 * KiB;
}

/** Resident memory grows faster than the engine's (1.4 GiB per 1024/4096 session, 1.9 GiB per 4096/16384). */
export const sessionResidentBytes = (sizes: SessionSizes): number => 2.5 * sessionEngineBytes(sizes);

/** The engine's memory that stays after the first session: code, thread stacks, buffers. */
export const ENGINE_BASE_BYTES = 320 * MiB;
/** A wasm32 instance cannot pass 4 GiB. */
export const WASM_LIMIT_BYTES = 4 * GiB;

export interface Machine {
  cores: number;
  totalMemoryBytes: number;
}

/**
 * Default pool size: warm sessions plus one live on-demand session must fit in three quarters of the wasm
 * limit and in half the machine's memory; at most one per core, because sessions in use are CPU-bound
 * and more ready sessions than cores cannot be used at full speed anyway. At least 1.
 */
export function defaultPoolSize(machine: Machine, sizes: SessionSizes): number {
  const byWasm = Math.floor((WASM_LIMIT_BYTES * 0.75 - ENGINE_BASE_BYTES) / sessionEngineBytes(sizes)) - 1;
  const byMachine = Math.floor((machine.totalMemoryBytes * 0.5) / sessionResidentBytes(sizes)) - 1;
  return Math.max(1, Math.min(machine.cores, byWasm, byMachine));
}

/** The largest pool size accepted from the environment for these sizes: the wasm limit, hard. */
export function maxPoolSize(sizes: SessionSizes): number {
  return Math.max(1, Math.floor((WASM_LIMIT_BYTES * 0.9 - ENGINE_BASE_BYTES) / sessionEngineBytes(sizes)) - 1);
}

/** Sessions in use are CPU-bound: beyond this many at once none gets faster, all get slower. */
const LIVE_SESSIONS_CAP = 4;

/**
 * The most live sessions (at the prover's full sizes) that fit in one engine beside a full warm pool,
 * within 90% of the wasm limit: the default and the ceiling of PROVER_MAX_SESSIONS. At least 1.
 */
export function maxLiveSessions(pool: { size: number; sizes: SessionSizes }, limits: SessionSizes): number {
  const free = WASM_LIMIT_BYTES * 0.9 - ENGINE_BASE_BYTES - pool.size * sessionEngineBytes(pool.sizes);
  return Math.max(1, Math.min(LIVE_SESSIONS_CAP, Math.floor(free / sessionEngineBytes(limits))));
}

/**
 * How many warm sessions each host should have: slots dealt round-robin over the hosts in priority order
 * (configured hosts first, then learned ones, most recent first). Hosts beyond the pool size get none.
 */
export function hostShares(poolSize: number, hosts: readonly string[]): Map<string, number> {
  const shares = new Map<string, number>();
  if (hosts.length === 0) return shares;
  for (let slot = 0; slot < poolSize; slot++) {
    const host = hosts[slot % hosts.length]!;
    shares.set(host, (shares.get(host) ?? 0) + 1);
  }
  return shares;
}

/** Learned hosts, most recent first, without duplicates or configured hosts, at most `limit`. */
export function rememberHost(learned: readonly string[], host: string, configured: readonly string[], limit: number): string[] {
  if (limit <= 0 || configured.includes(host)) return [...learned];
  return [host, ...learned.filter((h) => h !== host)].slice(0, limit);
}

/** Wait before the next refill after `failures` failures in a row: 1 s doubling to 60 s. */
export function backoffMs(failures: number): number {
  return failures <= 0 ? 0 : Math.min(60_000, 1000 * 2 ** (failures - 1));
}

/** True when a session of `sizes` can carry an exchange announced as `needed`. */
export const fitsIn = (needed: SessionSizes, sizes: SessionSizes): boolean =>
  needed.maxSentData <= sizes.maxSentData && needed.maxRecvData <= sizes.maxRecvData;

/** Sessions of one size class kept warm for one host. */
export interface WarmTarget {
  host: string;
  sizes: SessionSizes;
  count: number;
  /** Asked for by an operator (`/prepare`): kept until dropped, beside the automatic share. */
  pinned: boolean;
}

/**
 * What the pool keeps warm: the operator's pinned (host, class, count) first, then the automatic slots
 * dealt over the hosts by `hostShares`, each host in the class its last request needed.
 */
export function warmTargets(
  poolSize: number,
  hosts: readonly string[],
  classOf: (host: string) => SessionSizes,
  pinned: readonly Omit<WarmTarget, "pinned">[],
): WarmTarget[] {
  const automatic = [...hostShares(poolSize, hosts)].map(([host, count]) => ({ host, sizes: classOf(host), count, pinned: false }));
  return [...pinned.map((p) => ({ ...p, pinned: true })), ...automatic];
}

export interface RefillLoad {
  /** On-demand setups under way (requests that found no warm session). */
  setups: number;
  /** Sessions handed to requests and past their setup (exchange, reveal). */
  inUse: number;
  /** Refills under way. */
  warming: number;
  /** How many sessions can each have the engine's thread count in cores (cores / threads, at least 1). */
  cpuSlots: number;
}

/**
 * Whether a refill may start now. Waiting for a fully idle prover lets the pool drain under steady load,
 * so a refill also runs beside sessions past their setup while each still has cores of its own. Never
 * beside an on-demand setup, and never beside a live session on cores it would share: that would make the
 * request slower than a setup alone (1 thread instead of 2: 33 s instead of 25 s at 1024/4096), and a slowed
 * MPC-TLS handshake can outlast the target's patience. One refill at a time.
 */
export const mayRefill = (load: RefillLoad): boolean =>
  load.warming === 0 && load.setups === 0 && load.inUse < Math.max(1, load.cpuSlots);
