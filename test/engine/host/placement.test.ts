import { describe, expect, test } from "bun:test";
import { HOST_BUDGET_BYTES, defaultHostCount, placeSession } from "../../../src/engine/host/placement.ts";
import { GiB, sessionEngineBytes } from "../../../src/engine/memory.ts";

const LARGE = sessionEngineBytes({ maxSentData: 4096, maxRecvData: 16384 });
const SMALL = sessionEngineBytes({ maxSentData: 1024, maxRecvData: 1536 });

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

  test("default host count: one per 8 GiB, at most one per core, at least one", () => {
    expect(defaultHostCount({ cores: 2, totalMemoryBytes: 24 * GiB })).toBe(2);
    expect(defaultHostCount({ cores: 16, totalMemoryBytes: 24 * GiB })).toBe(3);
    expect(defaultHostCount({ cores: 1, totalMemoryBytes: 64 * GiB })).toBe(1);
    expect(defaultHostCount({ cores: 8, totalMemoryBytes: 4 * GiB })).toBe(1);
  });
});
