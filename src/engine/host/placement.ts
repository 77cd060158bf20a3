/**
 * Pure decisions about engine hosts: how many to run and where a session goes. No processes here, so they
 * are tested without MPC.
 */
import type { SessionSizes } from "../../protocol/notary.ts";
import { ENGINE_BASE_BYTES, GiB, WASM_LIMIT_BYTES, sessionEngineBytes, verifierEngineBytes } from "../memory.ts";

/** What one engine may hold in sessions: 90% of the wasm limit, less the engine's own base. */
export const HOST_BUDGET_BYTES = WASM_LIMIT_BYTES * 0.9 - ENGINE_BASE_BYTES;

/** Where sessions live: `hosts` engine hosts, and with an embedded notary its verifiers in one more engine. */
export interface Engines {
  hosts: number;
  embeddedNotary: boolean;
}

/** The engines in words, for errors about what they hold. */
export const enginesText = (engines: Engines): string =>
  `${engines.hosts} engine host${engines.hosts === 1 ? "" : "s"} of 4 GiB${engines.embeddedNotary ? " and the embedded notary's one engine" : ""}`;

/**
 * Sessions of `sizes` the engines hold at once: each host within its budget, and an embedded notary's one
 * engine within its own, whatever the number of hosts.
 */
export function hostedSessions(engines: Engines, sizes: SessionSizes): number {
  const byHosts = engines.hosts * Math.floor(HOST_BUDGET_BYTES / sessionEngineBytes(sizes));
  return engines.embeddedNotary ? Math.min(byHosts, Math.floor(HOST_BUDGET_BYTES / verifierEngineBytes(sizes))) : byHosts;
}

/** Machine memory per engine host by default: a host holding its full budget is about 6-8 GiB resident. */
const MEMORY_PER_HOST_BYTES = 8 * GiB;

/**
 * Default number of engine hosts: one per 8 GiB of memory, at most one per core (sessions are CPU-bound,
 * so more engines than cores add memory, not speed), at least 1.
 */
export function defaultHostCount(machine: { cores: number; totalMemoryBytes: number }): number {
  return Math.max(1, Math.min(machine.cores, Math.floor(machine.totalMemoryBytes / MEMORY_PER_HOST_BYTES)));
}

export interface HostRoom {
  /** Bytes its live sessions hold, by the memory model. */
  reservedBytes: number;
  /** Engine calls running on it now (setups, exchanges, reveals). */
  busy: number;
  /** Retired hosts (a call on them may never end) take no new session. */
  retiring: boolean;
}

/**
 * The host a session costing `costBytes` goes to: among hosts not retiring with room left for it, the least busy
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
