import { describe, expect, test } from "bun:test";
import {
  HOST_BUDGET_BYTES,
  defaultHostCount,
  fitsBeside,
  hostedSessions,
  hostsToPause,
  placeSession,
  sessionCost,
} from "../../../src/engine/host/placement.ts";
import { GiB, MiB, sideEngineBytes } from "../../../src/engine/memory.ts";

const LARGE = sideEngineBytes({ maxSentData: 4096, maxRecvData: 16384 });
const SMALL = sideEngineBytes({ maxSentData: 1024, maxRecvData: 1536 });

describe("engine host placement", () => {
  test("a session goes to the host with the most room, so sessions spread over the engines", () => {
    const hosts = [
      { reservedBytes: LARGE, busy: 0, retiring: false },
      { reservedBytes: SMALL, busy: 0, retiring: false },
      { reservedBytes: 2 * SMALL, busy: 0, retiring: false },
    ];
    expect(placeSession(hosts, SMALL)).toBe(1);
    expect(placeSession([{ reservedBytes: 0, busy: 0, retiring: false }, { reservedBytes: 0, busy: 0, retiring: false }], LARGE)).toBe(0);
  });

  test("a busy host (calls running) is passed over while one is idle: a setup there would wait behind them", () => {
    const busy = { reservedBytes: 0, busy: 1, retiring: false };
    const idleButFuller = { reservedBytes: 2 * SMALL, busy: 0, retiring: false };
    expect(placeSession([busy, idleButFuller], SMALL)).toBe(1);
    expect(placeSession([busy, { ...busy, busy: 2 }], SMALL)).toBe(0);
    // Room still decides: an idle host without room for it is no choice.
    expect(placeSession([busy, { ...idleButFuller, reservedBytes: HOST_BUDGET_BYTES }], SMALL)).toBe(0);
  });

  test("a retiring host (a call on it hung) takes nothing, however empty", () => {
    expect(placeSession([{ reservedBytes: 0, busy: 0, retiring: true }, { reservedBytes: LARGE, busy: 0, retiring: false }], LARGE)).toBe(1);
    expect(placeSession([{ reservedBytes: 0, busy: 0, retiring: true }], SMALL)).toBeUndefined();
  });

  test("no host with room for the session's cost: none is chosen (the caller answers over_capacity)", () => {
    const perHost = Math.floor(HOST_BUDGET_BYTES / LARGE);
    expect(perHost).toBeGreaterThanOrEqual(2);
    const full = { reservedBytes: perHost * LARGE, busy: 0, retiring: false };
    expect(placeSession([full, full], LARGE)).toBeUndefined();
    // A smaller session may still fit beside them.
    expect(placeSession([full], HOST_BUDGET_BYTES - perHost * LARGE)).toBe(0);
    expect(placeSession([], SMALL)).toBeUndefined();
  });

  test("default host count: one per 8 GiB, at most one per core, at least one; one more with an embedded notary", () => {
    expect(defaultHostCount({ cores: 2, totalMemoryBytes: 24 * GiB }, false)).toBe(2);
    expect(defaultHostCount({ cores: 2, totalMemoryBytes: 24 * GiB }, true)).toBe(3);
    expect(defaultHostCount({ cores: 2, totalMemoryBytes: 64 * GiB }, true)).toBe(3);
    expect(defaultHostCount({ cores: 16, totalMemoryBytes: 24 * GiB }, false)).toBe(3);
    expect(defaultHostCount({ cores: 1, totalMemoryBytes: 64 * GiB }, false)).toBe(1);
    expect(defaultHostCount({ cores: 8, totalMemoryBytes: 4 * GiB }, false)).toBe(1);
    expect(defaultHostCount({ cores: 8, totalMemoryBytes: 4 * GiB }, true)).toBe(2);
  });

  test("each side of a session is counted above what it was measured to hold (BENCHMARKS.md, memory per warm session)", () => {
    // Prover side, notary side: MiB per warm session at 1024/1536, 2048/6144 and 4096/16384.
    const measured: [number, number, number, number][] = [
      [1024, 1536, 210, 245],
      [2048, 6144, 431, 409],
      [4096, 16384, 688, 657],
    ];
    for (const [sent, recv, prover, notary] of measured) {
      expect(sideEngineBytes({ maxSentData: sent, maxRecvData: recv })).toBeGreaterThanOrEqual(Math.max(prover, notary) * MiB);
    }
  });

  test("an embedded notary's Verifier shares its prover's host: a session costs both sides there", () => {
    const large = { maxSentData: 4096, maxRecvData: 16384 };
    expect(sessionCost({ hosts: 1, embeddedNotary: false }, large)).toBe(LARGE);
    expect(sessionCost({ hosts: 1, embeddedNotary: true }, large)).toBe(2 * LARGE);
    expect(hostedSessions({ hosts: 3, embeddedNotary: false }, large)).toBe(3 * Math.floor(HOST_BUDGET_BYTES / LARGE));
    expect(hostedSessions({ hosts: 3, embeddedNotary: true }, large)).toBe(3 * Math.floor(HOST_BUDGET_BYTES / (2 * LARGE)));
  });

  test("fitsBeside: sessions are packed into the hosts' room left, the largest first; retiring hosts give none", () => {
    const empty = { reservedBytes: 0, busy: 0, retiring: false };
    const perHost = Math.floor(HOST_BUDGET_BYTES / LARGE);
    expect(fitsBeside([empty, empty], Array(2 * perHost).fill(LARGE))).toBe(true);
    expect(fitsBeside([empty, empty], Array(2 * perHost + 1).fill(LARGE))).toBe(false);
    // What a host holds already counts; room left over on each host adds up only side by side, never split.
    const nearlyFull = { ...empty, reservedBytes: HOST_BUDGET_BYTES - LARGE + 1 };
    expect(SMALL).toBeLessThan(LARGE - 1);
    expect(fitsBeside([nearlyFull, nearlyFull], [SMALL, SMALL])).toBe(true);
    expect(fitsBeside([nearlyFull, nearlyFull], [LARGE])).toBe(false);
    // Largest first: a small side does not take the room the large one needs.
    const roomForLarge = { ...empty, reservedBytes: HOST_BUDGET_BYTES - LARGE };
    const roomForSmall = { ...empty, reservedBytes: HOST_BUDGET_BYTES - SMALL };
    expect(fitsBeside([roomForSmall, roomForLarge], [SMALL, LARGE])).toBe(true);
    expect(fitsBeside([{ ...empty, retiring: true }], [SMALL])).toBe(false);
    expect(fitsBeside([], [])).toBe(true);
  });

  test("hostsToPause: a host running only refills that yield is paused while a live call runs in another host", () => {
    const idle = { live: 0, yielding: 0, running: 0 };
    const refill = { ...idle, yielding: 1 };
    const live = { ...idle, live: 1 };
    expect(hostsToPause([refill, live, idle])).toEqual([true, false, false]);
    // No live call elsewhere: the refill has the cores to itself.
    expect(hostsToPause([refill, idle, idle])).toEqual([false, false, false]);
    // A live call in its own host: pausing would stop that call too.
    expect(hostsToPause([{ ...refill, live: 1 }, idle])).toEqual([false, false]);
    // A refill that may not yield (dialing the notary, or given up) keeps its host running.
    expect(hostsToPause([{ ...refill, running: 1 }, live])).toEqual([false, false]);
    expect(hostsToPause([{ ...idle, running: 1 }, live])).toEqual([false, false]);
    // Two hosts of refills beside one live call: both yield.
    expect(hostsToPause([refill, { ...idle, yielding: 2 }, live])).toEqual([true, true, false]);
    expect(hostsToPause([refill])).toEqual([false]);
    expect(hostsToPause([])).toEqual([]);
  });
});
