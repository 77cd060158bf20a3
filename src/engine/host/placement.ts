/**
 * Pure decisions about engine hosts: how many to run and where a session's sides go. No processes here, so
 * they are tested without MPC.
 */
import type { SessionSizes } from "../../core/session-sizes.ts";
import { ENGINE_BASE_BYTES, GiB, WASM_LIMIT_BYTES, sideEngineBytes } from "../memory.ts";

/** What one engine may hold in sessions: 90% of the wasm limit, less the engine's own base. */
export const HOST_BUDGET_BYTES = WASM_LIMIT_BYTES * 0.9 - ENGINE_BASE_BYTES;

/** Where sessions live: `hosts` engine hosts, which with an embedded notary hold each session's Verifier too. */
export interface Engines {
  hosts: number;
  embeddedNotary: boolean;
}

/** The engines in words, for errors about what they hold. */
export const enginesText = (engines: Engines): string =>
  `${engines.hosts} engine host${engines.hosts === 1 ? "" : "s"} of 4 GiB${engines.embeddedNotary ? ", holding both sides of each session" : ""}`;

/**
 * The engine memory a session of `sizes` takes in its host: its prover's side, and with an embedded notary its
 * Verifier's too, which runs in the same host (both sides of a session in one engine, as in a single process).
 */
export const sessionCost = (engines: Engines, sizes: SessionSizes): number => (engines.embeddedNotary ? 2 : 1) * sideEngineBytes(sizes);

/** Sessions of `sizes` the engines hold at once: each within one host's budget. */
export function hostedSessions(engines: Engines, sizes: SessionSizes): number {
  return engines.hosts * Math.floor(HOST_BUDGET_BYTES / sessionCost(engines, sizes));
}

/** Machine memory per engine host by default: a host holding its full budget is about 6-8 GiB resident. */
const MEMORY_PER_HOST_BYTES = 8 * GiB;

/**
 * Default number of engine hosts: one per 8 GiB of memory, at most one per core (sessions are CPU-bound, so more
 * engines than cores add memory, not speed), at least 1; and one more with an embedded notary, whose Verifiers run
 * in the hosts too. That keeps the engine count the notary had when its Verifiers ran in the prover's own engine:
 * measured on 2 cores, sustained throughput was 0.83 of bare sessions with 2 hosts and 0.95 with 3 (BENCHMARKS.md).
 */
export function defaultHostCount(machine: { cores: number; totalMemoryBytes: number }, embeddedNotary: boolean): number {
  const forProvers = Math.max(1, Math.min(machine.cores, Math.floor(machine.totalMemoryBytes / MEMORY_PER_HOST_BYTES)));
  return forProvers + (embeddedNotary ? 1 : 0);
}

export interface HostRoom {
  /** Bytes its live provers and Verifiers hold, by the memory model. */
  reservedBytes: number;
  /** Engine calls running on it now (setups, exchanges, reveals, verifications). */
  busy: number;
  /** Retired hosts (a call on them may never end) take nothing new. */
  retiring: boolean;
}

/**
 * The host a side costing `costBytes` goes to: among hosts not retiring with room left for it, the least busy
 * one (an engine's threads serve its calls from one queue: a setup placed beside a running exchange would hold it
 * up, on another host it only shares cores), then the one with the most room. Undefined when none has room.
 */
export function placeSession(hosts: readonly HostRoom[], costBytes: number, budgetBytes = HOST_BUDGET_BYTES): number | undefined {
  let best: number | undefined;
  for (const [index, host] of hosts.entries()) {
    if (host.retiring || budgetBytes - host.reservedBytes < costBytes) continue;
    const current = best === undefined ? undefined : hosts[best]!;
    if (!current || host.busy < current.busy || (host.busy === current.busy && host.reservedBytes < current.reservedBytes)) best = index;
  }
  return best;
}

/**
 * Whether sessions costing `costs` all fit in the hosts besides what they hold: each, largest first, into the host
 * with the most room left. A greedy packing: it may refuse a set a cleverer one would fit, never the reverse.
 */
export function fitsBeside(hosts: readonly HostRoom[], costs: readonly number[], budgetBytes = HOST_BUDGET_BYTES): boolean {
  const room = hosts.filter((h) => !h.retiring).map((h) => budgetBytes - h.reservedBytes);
  for (const cost of [...costs].sort((a, b) => b - a)) {
    const most = room.reduce((best, r, i) => (r > (room[best] ?? -Infinity) ? i : best), -1);
    if (most < 0 || room[most]! < cost) return false;
    room[most]! -= cost;
  }
  return true;
}

/** The prover calls running in one host, as pausing sees them (a Verifier's calls follow its prover's and do not count). */
export interface HostCalls {
  /** A request's exchanges and reveals: the target and the client wait on them now. */
  live: number;
  /** Refills' setups that may be paused: both sockets of their session open, and no request waits for them. */
  yielding: number;
  /** Setups that run on: on-demand ones, refills a request has joined, refills still connecting or given up. */
  running: number;
}

/**
 * Which hosts to pause (SIGSTOP) now: those running only refills that may yield, while a request's exchange or
 * reveal runs in another host. It shares the cores with whatever else runs: measured on 2 cores, a warm 12 KB
 * request took 9-10 s alone and 14-18 s beside a refill's setup (BENCHMARKS.md, run L). Setups do not pause
 * refills: they are long, and a refill paused through each would leave the pool empty for the requests after
 * them (run O). A host with a call of its own that must run on is not paused.
 */
export function hostsToPause(hosts: readonly HostCalls[]): boolean[] {
  const live = hosts.map((h) => h.live > 0);
  return hosts.map((h, i) => h.yielding > 0 && h.live === 0 && h.running === 0 && live.some((l, j) => l && j !== i));
}
