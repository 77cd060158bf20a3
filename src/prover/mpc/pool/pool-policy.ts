import { SetupFailed } from "../../../engine/session.ts";
import { type Engines, fitsBeside, hostedSessions, sessionCost } from "../../../engine/host/placement.ts";
import { sessionResidentBytes } from "../../../engine/memory.ts";
import type { SessionSizes } from "../../../core/session-sizes.ts";

/**
 * Pure decisions of the warm pool: how many sessions the machine can hold, which hosts get them, how
 * long to wait after a failure. No timers or engine here, so they are tested without MPC.
 */

export interface Machine {
  cores: number;
  totalMemoryBytes: number;
}

/**
 * Default pool size: warm sessions plus one live on-demand session must fit in the engine hosts and in half
 * the machine's memory; at most one per core, because sessions in use are CPU-bound and more ready sessions
 * than cores cannot be used at full speed anyway. At least 1.
 */
export function defaultPoolSize(machine: Machine, sizes: SessionSizes, engines: Engines): number {
  const byEngines = maxPoolSize(sizes, sizes, engines);
  const byMachine = Math.floor((machine.totalMemoryBytes * 0.5) / sessionResidentBytes(sizes)) - 1;
  return Math.max(1, Math.min(machine.cores, byEngines, byMachine));
}

/** The most warm sessions any setting may ask for (PROVER_POOL_SIZE's own limit). */
const POOL_SIZE_CAP = 64;

/**
 * The most warm sessions of `sizes` the engines hold while room stays for one live session of `live` (the
 * largest class): the ceiling of PROVER_POOL_SIZE, counted in the smallest class, and of `/prepare` per class.
 * The pool checks the same room before each refill (`EngineHosts.fitsBeside`), so sessions of bigger classes
 * stop where they no longer fit. At least 1.
 */
export function maxPoolSize(sizes: SessionSizes, live: SessionSizes, engines: Engines): number {
  const empty = Array.from({ length: engines.hosts }, () => ({ reservedBytes: 0, busy: 0, retiring: false }));
  const fits = (warm: number) => fitsBeside(empty, [...Array<SessionSizes>(warm).fill(sizes), live].map((s) => sessionCost(engines, s)));
  let warm = 0;
  while (warm < POOL_SIZE_CAP && fits(warm + 1)) warm++;
  return Math.max(1, warm);
}

/** Sessions in use are CPU-bound: beyond this many at once none gets faster, all get slower. */
const LIVE_SESSIONS_CAP = 4;

/**
 * The most live sessions: as many full-size sessions as the engines hold, at most LIVE_SESSIONS_CAP. The
 * default and the ceiling of PROVER_MAX_SESSIONS. Memory itself is guarded where sessions are placed
 * (engine-hosts.ts): a session that finds no room, warm sessions holding it, is refused with over_capacity.
 */
export function maxLiveSessions(limits: SessionSizes, engines: Engines): number {
  return Math.max(1, Math.min(LIVE_SESSIONS_CAP, hostedSessions(engines, limits)));
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

/**
 * Which short target the next refill serves: the one with the fewest ready sessions, ties in the order
 * `warmTargets` lists them. A host with none ready sends its next request to an on-demand setup, where one with a session
 * left can still serve one: in a burst, refilling in priority order let a host run dry while others were topped up.
 * `hasRoom` says whether the engines hold one more session of a target's class.
 */
export function nextRefill<T extends { count: number }>(targets: readonly T[], ready: (target: T) => number, hasRoom: (target: T) => boolean): T | undefined {
  let next: T | undefined;
  let fewest = Number.POSITIVE_INFINITY;
  for (const target of targets) {
    const held = ready(target);
    if (held < target.count && held < fewest && hasRoom(target)) [next, fewest] = [target, held];
  }
  return next;
}

export interface RefillLoad {
  /**
   * Sessions set up on demand (requests that found no warm session), from their setup to their end: a request
   * already paying for a setup must not be slowed further.
   */
  onDemand: number;
  /** Sessions handed to requests and past their setup (exchange, reveal). */
  inUse: number;
  /** Refills under way. */
  warming: number;
  /** How many sessions can each have the engine's thread count in cores (cores / threads, at least 1). */
  cpuSlots: number;
  /** A refill's engine host is paused while a request's exchange or reveal runs in another (engine-hosts.ts). */
  refillsYield: boolean;
}

/**
 * Whether a refill may start now. One refill at a time, and never beside a session set up on demand (its request
 * would get slower than on-demand setup alone).
 *
 * Beside warm sessions in use: where refills yield, always. The refill then runs only while no exchange or
 * reveal does, and waiting for an idle prover let a burst drain the pool: each request of a burst kept the next
 * refill from starting, so hosts ran dry (BENCHMARKS.md, "Exchanges in turns" and "Refills beside requests").
 * Where they cannot yield, only while each session in use still has cores of its own: measured on 2 cores, a
 * warm 12 KB proof beside a refill in another engine host took 18 s (the bare exchange takes about 3) and a cold
 * small GET 17 s instead of 11, and a slowed MPC-TLS handshake can outlast the target's patience.
 */
export const mayRefill = (load: RefillLoad): boolean =>
  load.warming === 0 && load.onDemand === 0 && (load.refillsYield || load.inUse < Math.max(1, load.cpuSlots));

/** A refill may take this many times the slowest setup of its class seen so far before it counts as stalled. */
const STALL_FACTOR = 4;
/** A refill's deadline is never shorter than this: one slow setup on a busy machine is not a stall. */
const REFILL_DEADLINE_FLOOR_MS = 60_000;

/**
 * How long a refill's setup may run before it is given up as stalled. An engine can wait forever on a notary
 * that is alive but silent; without a deadline that refill would hold the pool's only refill turn (and any
 * request that joined it) until the notary's own session timeout. Before a setup of the class has been
 * timed, the session deadline (`sessionTimeoutMs`) is the bound; never more than it.
 */
export function refillDeadlineMs(slowestSetupMs: number | undefined, sessionTimeoutMs: number): number {
  if (slowestSetupMs === undefined) return sessionTimeoutMs;
  return Math.min(sessionTimeoutMs, Math.max(REFILL_DEADLINE_FLOOR_MS, STALL_FACTOR * slowestSetupMs));
}

/** What decides whether a request's on-demand setup that failed is run once more. */
export interface SetupRetryState {
  /** Setups run for this request so far, the failed one included. */
  attempts: number;
  /** The pool is stopping: the prover shuts down. */
  stopped: boolean;
  /** The request was abandoned (its deadline passed, its notary went away): its signal aborted. */
  abandoned: boolean;
  /** Time left before the request's deadline; undefined when it has none (its signal still bounds the retry). */
  remainingMs: number | undefined;
  /** The slowest setup of the class seen so far, when one has been timed. */
  slowestSetupMs: number | undefined;
}

/** A setup's length assumed before one of its class has been timed (a small one takes 12-30 s on 2 cores). */
const UNTIMED_SETUP_MS = 60_000;
/** What a request still needs after its setup: the exchange and the reveal (3-11 s each on a loaded machine). */
const AFTER_SETUP_MS = 30_000;

/**
 * Whether a request's on-demand setup may run once more after `error`. Only a failure of the setup with its notary
 * (`SetupFailed`: its socket dropped or stalled, or the notary was found gone) qualifies: nothing was sent to a
 * target, so a retry repeats no request. Never a third time, never for an abandoned request or while stopping, and
 * only when the time left holds another setup of its class plus the exchange. The caller also checks that a notary
 * answers now (the one found gone no longer counts: with several, another takes the second setup).
 */
export function maySetupAgain(error: unknown, state: SetupRetryState): boolean {
  if (!(error instanceof SetupFailed) || state.attempts >= 2 || state.stopped || state.abandoned) return false;
  return state.remainingMs === undefined || state.remainingMs >= (state.slowestSetupMs ?? UNTIMED_SETUP_MS) + AFTER_SETUP_MS;
}
