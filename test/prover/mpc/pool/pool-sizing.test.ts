import { describe, expect, test } from "bun:test";
import { cpus } from "node:os";
import { type ProverSession, closeProverSession } from "../../../../src/engine/session.ts";
import { loadPoolConfig } from "../../../../src/prover/mpc/pool/config.ts";
import { createLogger } from "../../../../src/base/log.ts";
import { EndpointSizes } from "../../../../src/prover/mpc/pool/endpoint-sizes.ts";
import { mayRefill, warmTargets } from "../../../../src/prover/mpc/pool/pool-policy.ts";
import { type PoolOptions, createWarmPool } from "../../../../src/prover/mpc/pool/pool.ts";
import { unusedEngine } from "../../../../testkit/unused-engine.ts";
import { afterPendingWork } from "../../../../testkit/wait.ts";
import {
  type SessionNeed,
  classForRepeat,
  classesWithin,
  className,
  endpointKey,
  planSession,
  requestBytes,
  withMargin,
} from "../../../../src/prover/mpc/pool/size-classes.ts";

const XS = { maxSentData: 1024, maxRecvData: 1024 };
const S = { maxSentData: 2048, maxRecvData: 4096 };
const L = { maxSentData: 4096, maxRecvData: 16384 };
const CLASSES = [XS, S, L];
const plan = (over: Partial<Parameters<typeof planSession>[0]>) =>
  planSession({ classes: CLASSES, defaultClass: L, announced: {}, requestBytes: 300, canRepeat: true, ...over });

describe("size classes", () => {
  test("configured classes are cut to the limits, deduplicated, sorted, and end with the limits", () => {
    const limits = { maxSentData: 1024, maxRecvData: 3072 };
    expect(classesWithin([L, XS, S], limits, [{ maxSentData: 1024, maxRecvData: 2048 }]).map(className)).toEqual([
      "1024/1024",
      "1024/2048",
      "1024/3072",
    ]);
    expect(classesWithin([XS], L).map(className)).toEqual(["1024/1024", "4096/16384"]);
  });

  test("the default classes come from the environment, and a malformed list is refused by name", () => {
    const config = loadPoolConfig({}, L, { threads: 2, hosts: 1, embeddedNotary: true });
    expect(config.classes.map(className)).toEqual(["1024/1536", "2048/6144", "4096/16384"]);
    expect(config.repeatTooLarge).toBe(true);
    expect(loadPoolConfig({ PROVER_REPEAT_TOO_LARGE: "0", PROVER_SIZE_CLASSES: "512/512" }, L, { threads: 2, hosts: 1, embeddedNotary: true })).toMatchObject({ repeatTooLarge: false });
    expect(() => loadPoolConfig({ PROVER_SIZE_CLASSES: "1k/4k" }, L, { threads: 2, hosts: 1, embeddedNotary: true })).toThrow("PROVER_SIZE_CLASSES");
    expect(() => loadPoolConfig({ PROVER_SIZE_CLASSES: "10/4096" }, L, { threads: 2, hosts: 1, embeddedNotary: true })).toThrow("PROVER_SIZE_CLASSES");
  });

  test("refills beside live sessions only when each can have the engine's threads in cores, however many engine hosts", () => {
    const cores = cpus().length;
    expect(loadPoolConfig({}, L, { threads: cores, hosts: 1, embeddedNotary: true }).cpuSlots).toBe(1);
    expect(loadPoolConfig({}, L, { threads: 1, hosts: 1, embeddedNotary: true }).cpuSlots).toBe(cores);
    expect(loadPoolConfig({}, L, { threads: cores * 4, hosts: 1, embeddedNotary: true }).cpuSlots).toBe(1);
    // Engine hosts of their own still share the cores: no more refills beside live sessions.
    expect(loadPoolConfig({}, L, { threads: cores, hosts: 2, embeddedNotary: true }).cpuSlots).toBe(1);
  });

  test("setups at once: one more than the cpu slots by default; exchanges: one per slot; or PROVER_CONCURRENT_SETUPS / _EXCHANGES", () => {
    const cores = cpus().length;
    const engines = { hosts: 1, embeddedNotary: true };
    expect(loadPoolConfig({}, L, { threads: cores, ...engines }).concurrentSetups).toBe(2);
    expect(loadPoolConfig({}, L, { threads: 1, ...engines }).concurrentSetups).toBe(cores + 1);
    expect(loadPoolConfig({ PROVER_CONCURRENT_SETUPS: "3" }, L, { threads: cores, ...engines }).concurrentSetups).toBe(3);
    expect(() => loadPoolConfig({ PROVER_CONCURRENT_SETUPS: "0" }, L, { threads: cores, ...engines })).toThrow("PROVER_CONCURRENT_SETUPS");
    expect(loadPoolConfig({}, L, { threads: cores, ...engines }).concurrentExchanges).toBe(1);
    expect(loadPoolConfig({}, L, { threads: 1, ...engines }).concurrentExchanges).toBe(cores);
    expect(loadPoolConfig({ PROVER_CONCURRENT_EXCHANGES: "2" }, L, { threads: cores, ...engines }).concurrentExchanges).toBe(2);
    expect(() => loadPoolConfig({ PROVER_CONCURRENT_EXCHANGES: "0" }, L, { threads: cores, ...engines })).toThrow("PROVER_CONCURRENT_EXCHANGES");
  });

  test("an unseen GET gets the smallest class; an unseen POST the default class", () => {
    expect(plan({})).toMatchObject({ class: XS, setup: XS, reason: "smallest" });
    expect(plan({ canRepeat: false })).toMatchObject({ class: L, setup: L, reason: "default" });
  });

  test("a learned answer size picks the smallest class that holds it with a margin", () => {
    expect(plan({ learnedRecv: 700 })).toMatchObject({ class: XS, reason: "learned" });
    // 900 bytes with the margin no longer fit 1 KiB.
    expect(withMargin(900)).toBeGreaterThan(1024);
    expect(plan({ learnedRecv: 900 })).toMatchObject({ class: S, reason: "learned" });
    expect(plan({ learnedRecv: 12_000, canRepeat: false })).toMatchObject({ class: L });
  });

  test("the request's own size counts: a large body moves the exchange to a class with room to send it", () => {
    expect(plan({ requestBytes: 1500 })).toMatchObject({ class: S, fits: { maxSentData: 1500, maxRecvData: 1024 } });
  });

  test("announced sizes are kept exactly for an on-demand setup; the class is the smallest that holds them", () => {
    const need = plan({ announced: { maxSentData: 256, maxRecvData: 1024 } });
    expect(need).toMatchObject({ class: XS, fits: { maxSentData: 256, maxRecvData: 1024 }, setup: { maxSentData: 256, maxRecvData: 1024 }, reason: "announced" });
    expect(plan({ announced: { maxRecvData: 3000 } })).toMatchObject({ class: S, setup: { maxSentData: 2048, maxRecvData: 3000 } });
  });

  test("request bytes: request line, headers and body, plus what the engine adds", () => {
    const get = requestBytes({ method: "GET", pathAndQuery: "/a", headers: [["host", "x.test"]], body: undefined });
    expect(get).toBeGreaterThanOrEqual("GET /a HTTP/1.1\r\nhost: x.test\r\n\r\n".length);
    const post = requestBytes({ method: "POST", pathAndQuery: "/a", headers: [["host", "x.test"]], body: { pad: "p".repeat(400) } });
    expect(post - get).toBeGreaterThan(400);
  });

  test("endpoints: numeric, UUID and long hex segments are folded, the query is left out, hosts compare in any case", () => {
    const key = endpointKey("API.test", "get", "/users/42/orders/0b5f0c1e-8a3c-4d6e-9f00-1234567890ab?page=2");
    expect(key).toBe("GET api.test/users/:id/orders/:id");
    expect(endpointKey("api.test", "GET", "/users/43/orders/deadbeefdeadbeefdead")).toBe(key);
    expect(endpointKey("api.test", "POST", "/users/43/orders/x")).not.toBe(key);
  });

  test("after an overflow the repeat takes the smallest bigger class holding what the engine saw", () => {
    expect(classForRepeat(CLASSES, XS, { direction: "recv", atLeastBytes: 3134 })).toEqual(S);
    expect(classForRepeat(CLASSES, XS, { direction: "recv", atLeastBytes: 5000 })).toEqual(L);
    // Unknown, or a whole TLS record seen (more may follow): the largest.
    expect(classForRepeat(CLASSES, XS, { direction: "recv" })).toEqual(L);
    expect(classForRepeat(CLASSES, XS, { direction: "recv", atLeastBytes: 16_400 })).toEqual(L);
    expect(classForRepeat(CLASSES, XS, { direction: "sent", atLeastBytes: 1500 })).toEqual(S);
    expect(classForRepeat(CLASSES, L, { direction: "recv", atLeastBytes: 20_000 })).toBeNull();
  });

  test("learned sizes: the latest answer wins, the least recently used endpoint is forgotten first", () => {
    const sizes = new EndpointSizes(2);
    sizes.learn("a", 100);
    sizes.learn("b", 200);
    sizes.learn("a", 150);
    expect(sizes.expected("b")).toBe(200); // b is now the most recently used
    sizes.learn("c", 300);
    expect([sizes.expected("a"), sizes.expected("b"), sizes.expected("c")]).toEqual([undefined, 200, 300]);
    const off = new EndpointSizes(0);
    off.learn("a", 1);
    expect(off.size).toBe(0);
  });
});

describe("refill policy", () => {
  test("refills that cannot yield: beside warm sessions in use only while each has its cores; never beside an on-demand session; one at a time", () => {
    const load = { onDemand: 0, inUse: 0, warming: 0, cpuSlots: 2, refillsYield: false };
    expect(mayRefill(load)).toBe(true);
    expect(mayRefill({ ...load, inUse: 1 })).toBe(true);
    expect(mayRefill({ ...load, inUse: 2 })).toBe(false);
    expect(mayRefill({ ...load, onDemand: 1 })).toBe(false);
    expect(mayRefill({ ...load, warming: 1 })).toBe(false);
    // One slot: only an idle prover refills.
    expect(mayRefill({ ...load, inUse: 1, cpuSlots: 1 })).toBe(false);
  });

  test("refills that yield start beside any number of warm sessions in use, still never beside an on-demand session and one at a time", () => {
    const load = { onDemand: 0, inUse: 0, warming: 0, cpuSlots: 1, refillsYield: true };
    expect(mayRefill({ ...load, inUse: 1 })).toBe(true);
    expect(mayRefill({ ...load, inUse: 3 })).toBe(true);
    expect(mayRefill({ ...load, inUse: 1, onDemand: 1 })).toBe(false);
    expect(mayRefill({ ...load, inUse: 1, warming: 1 })).toBe(false);
  });

  test("targets: pinned (host, class) first, then the automatic shares in each host's class", () => {
    const targets = warmTargets(3, ["a", "b"], (host) => (host === "a" ? XS : S), [{ host: "c", sizes: L, count: 2 }]);
    expect(targets.map((t) => [t.host, className(t.sizes), t.count, t.pinned])).toEqual([
      ["c", "4096/16384", 2, true],
      ["a", "1024/1024", 2, false],
      ["b", "2048/4096", 1, false],
    ]);
  });
});

/** A pool over fake sessions whose setups the test completes by hand. */
function fakePool(overrides: Partial<PoolOptions> = {}) {
  const setups: { host: string; sizes: typeof XS; resolve: () => void }[] = [];
  let counter = 0;
  const pool = createWarmPool({
    size: 1,
    sizes: S,
    classes: CLASSES,
    limits: L,
    hosts: ["a.test"],
    learnHosts: 2,
    idleMs: 60_000,
    sessionTimeoutMs: 300_000,
    cpuSlots: 2,
    refillsYield: () => false,
    concurrentSetups: 2,
    setup: (host, sizes) =>
      new Promise<ProverSession>((resolve) => {
        const session: ProverSession = { notarySessionId: `s${++counter}`, serverName: host, sizes, engine: unusedEngine(), closed: false };
        setups.push({ host, sizes, resolve: () => resolve(session) });
      }),
    discard: (session) => closeProverSession(session),
    notaryReachable: async () => true,
    isAlive: async () => true,
    besideSetup: () => false,
    hasRoom: () => true,
    log: createLogger({ level: "error" }),
    ...overrides,
  });
  const settle = afterPendingWork;
  /** Completes the setups started so far and those the pool starts after each, one at a time, until `count` are done. */
  async function completeSetups(count: number) {
    for (let done = 0; done < count; done++) {
      await settle();
      setups[done]!.resolve();
    }
    await settle();
  }
  return { pool, setups, settle, completeSetups };
}
const needOf = (cls: typeof XS, fits = cls): SessionNeed => ({ class: cls, fits, setup: cls, reason: "learned" });

describe("warm pool per (host, class)", () => {
  test("of equal sizes, a request takes a ready session whose engine runs no refill: that refill can then yield", async () => {
    const { pool, completeSetups } = fakePool({ size: 0, besideSetup: (session) => session.notarySessionId === "s1" });
    pool.prepare("a.test", S, 2);
    await completeSetups(2);
    expect(pool.status().ready).toBe(2);
    const taken = await pool.acquire("a.test", needOf(S));
    expect(taken.notarySessionId).toBe("s2");
    pool.stop();
  });

  test("a request takes the smallest ready session that fits; a warm bigger one beats a cold smaller one", async () => {
    const { pool, completeSetups } = fakePool({ size: 0 });
    pool.prepare("a.test", L, 1);
    pool.prepare("a.test", S, 1);
    await completeSetups(2);
    expect(pool.status().ready).toBe(2);
    const small = await pool.acquire("a.test", needOf(XS));
    expect(small.sizes).toEqual(S);
    const large = await pool.acquire("a.test", needOf(S, { maxSentData: 100, maxRecvData: 5000 }));
    expect(large.sizes).toEqual(L);
    expect(pool.status().served).toEqual({ ready: 2, warming: 0, onDemand: 0 });
    pool.stop();
  });

  test("under steady load the pool refills beside a session in use (2 cores), not only when idle", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    setups[0]!.resolve();
    await settle();
    const inUse = await pool.acquire("a.test", needOf(S));
    await settle();
    expect(setups).toHaveLength(2); // the refill started while the session is in use
    expect(pool.status()).toMatchObject({ inUse: 1, warming: 1 });
    closeProverSession(inUse);
    pool.stop();
  });

  test("no refill starts beside a session set up on demand, until it ends: its request already pays for a setup", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [] });
    const acquiring = pool.acquire("b.test", needOf(XS));
    await settle();
    expect(setups).toHaveLength(1);
    setups[0]!.resolve();
    const session = await acquiring;
    await settle();
    // Set up, now in its exchange: still no refill beside it.
    expect(setups).toHaveLength(1);
    expect(pool.status()).toMatchObject({ inUse: 1, warming: 0 });
    closeProverSession(session);
    await settle();
    // Over: the pool warms b.test in the class it needed.
    expect(setups.map((s) => [s.host, className(s.sizes)])).toEqual([["b.test", "1024/1024"], ["b.test", "1024/1024"]]);
    pool.stop();
  });

  test("pinned sessions are kept for a host and class until dropped; drop closes them and forgets the host", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 0 });
    pool.prepare("p.test", XS, 2);
    await settle();
    setups[0]!.resolve();
    await settle();
    setups[1]!.resolve();
    await settle();
    expect(pool.status().hosts).toEqual([{ host: "p.test", class: "1024/1024", learned: false, pinned: true, share: 2, ready: 2, warming: 0 }]);
    expect(pool.drop("p.test")).toBe(2);
    await settle();
    expect(pool.status()).toMatchObject({ ready: 0, warming: 0, hosts: [] });
    expect(setups).toHaveLength(2);
    pool.stop();
  });
});
