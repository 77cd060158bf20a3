/**
 * What an MPC session's socket carried: bytes each way and how long it has been quiet. A setup whose two sides
 * wait on each other (a stall) is quiet in both directions while a slow one is not, so the prover's setup watch
 * reads this through GET /session/{id} (src/engine/session.ts). The end of the longest quiet spell also dates the
 * exchange: a warm session's socket is quiet from its setup until its request comes (transcript.ts).
 */
import type { SessionTraffic } from "../../core/session-traffic.ts";

/** The clocks a counter reads: monotonic for spells, wall for dates (a test steps its own instead of sleeping). */
export interface TrafficClock {
  monotonicMs(): number;
  wallMs(): number;
}

export const systemTrafficClock: TrafficClock = { monotonicMs: () => performance.now(), wallMs: () => Date.now() };

export interface TrafficCounter {
  readonly clock: TrafficClock;
  fromProverBytes: number;
  toProverBytes: number;
  /** The monotonic clock's time of the last byte either way, or of the start. */
  lastAt: number;
  /** Longest spell with no byte either way, so far (logged when the session ends). */
  longestQuietMs: number;
  /** Wall-clock time (ms since the epoch) the socket started carrying bytes: at first, or after its longest quiet spell. */
  activeSince: number;
}

/** The shortest quiet spell that counts as a wait between two activities (a warm session's, between setup and request). */
export const QUIET_SPELL_MS = 2_000;

export const newTrafficCounter = (clock: TrafficClock = systemTrafficClock): TrafficCounter => ({
  clock,
  fromProverBytes: 0,
  toProverBytes: 0,
  lastAt: clock.monotonicMs(),
  longestQuietMs: 0,
  activeSince: clock.wallMs(),
});

export function countTraffic(counter: TrafficCounter, direction: "fromProver" | "toProver", bytes: number): void {
  const now = counter.clock.monotonicMs();
  // A warm session's wait for its request is its longest quiet spell; shorter ones (computing) do not move it.
  if (now - counter.lastAt >= QUIET_SPELL_MS && now - counter.lastAt > counter.longestQuietMs) counter.activeSince = counter.clock.wallMs();
  counter.longestQuietMs = Math.max(counter.longestQuietMs, now - counter.lastAt);
  counter.lastAt = now;
  if (direction === "fromProver") counter.fromProverBytes += bytes;
  else counter.toProverBytes += bytes;
}

export const trafficNow = (counter: TrafficCounter): SessionTraffic => ({
  fromProverBytes: counter.fromProverBytes,
  toProverBytes: counter.toProverBytes,
  quietMs: Math.round(counter.clock.monotonicMs() - counter.lastAt),
});

/** The counter as log fields, when the session ends. */
export function trafficFields(counter: TrafficCounter): Record<string, number> {
  const now = trafficNow(counter);
  return { ...now, longestQuietMs: Math.round(Math.max(counter.longestQuietMs, now.quietMs)) };
}
