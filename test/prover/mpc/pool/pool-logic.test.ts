import { describe, expect, test } from "bun:test";
import { BackgroundWork } from "../../../../src/engine/background.ts";
import { PausedTime } from "../../../../src/engine/paused-time.ts";
import { type ProverSession, SetupFailed, closeProverSession } from "../../../../src/engine/session.ts";
import { AppError } from "../../../../src/core/errors.ts";
import { createLogger } from "../../../../src/base/log.ts";
import { loadPoolConfig } from "../../../../src/prover/mpc/pool/config.ts";
import { HOST_BUDGET_BYTES, hostedSessions, sessionCost } from "../../../../src/engine/host/placement.ts";
import { ENGINE_BASE_BYTES, WASM_LIMIT_BYTES, sessionEngineBytes, sideEngineBytes } from "../../../../src/engine/memory.ts";
import {
  backoffMs,
  defaultPoolSize,
  fitsIn,
  hostShares,
  maxLiveSessions,
  maxPoolSize,
  maySetupAgain,
  nextRefill,
  refillDeadlineMs,
  rememberHost,
} from "../../../../src/prover/mpc/pool/pool-policy.ts";
import { type PoolOptions, createWarmPool } from "../../../../src/prover/mpc/pool/pool.ts";
import type { SessionNeed } from "../../../../src/prover/mpc/pool/size-classes.ts";
import { unusedEngine } from "../../../../testkit/unused-engine.ts";
import { afterPendingWork, afterTimersDue, eventually } from "../../../../testkit/wait.ts";

const GiB = 1024 ** 3;
const SMALL = { maxSentData: 1024, maxRecvData: 4096 };
const LARGE = { maxSentData: 4096, maxRecvData: 16384 };
/** An exchange that a session of `sizes` carries, in that class. */
const need = (sizes = SMALL, fits = sizes): SessionNeed => ({ class: sizes, fits, setup: sizes, reason: "default" });
/** One engine host and a remote notary; with 2 engine threads. */
const ONE = { hosts: 1, embeddedNotary: false };
const FOUR = { hosts: 4, embeddedNotary: false };
const ONE_HOST = { threads: 2, ...ONE };

describe("pool sizing", () => {
  test("memory per session grows with the session sizes", () => {
    expect(sessionEngineBytes(LARGE)).toBeGreaterThan(sessionEngineBytes(SMALL));
    // The measured points in one engine (BENCHMARKS.md): 574 MB per session at 1024/4096, 1281 MB at 4096/16384.
    expect(sessionEngineBytes(SMALL) / 1024 ** 2).toBeGreaterThanOrEqual(574);
    expect(sessionEngineBytes(LARGE) / 1024 ** 2).toBeGreaterThanOrEqual(1281);
  });

  test("the default is bounded by cores, by the engine hosts' 4 GiB each and by the machine's memory, and is at least 1", () => {
    expect(defaultPoolSize({ cores: 2, totalMemoryBytes: 24 * GiB }, SMALL, ONE)).toBe(2);
    expect(defaultPoolSize({ cores: 1, totalMemoryBytes: 24 * GiB }, SMALL, ONE)).toBe(1);
    const manyCores = defaultPoolSize({ cores: 64, totalMemoryBytes: 256 * GiB }, LARGE, ONE);
    // One host of a remote notary's prover holds only provers: four large ones, so three warm beside a live one.
    expect(manyCores).toBe(3);
    // Warm sessions plus one live session stay within one host's budget, under 90% of its 4 GiB.
    expect((manyCores + 1) * sideEngineBytes(LARGE)).toBeLessThanOrEqual(HOST_BUDGET_BYTES);
    expect(ENGINE_BASE_BYTES + HOST_BUDGET_BYTES).toBeLessThanOrEqual(WASM_LIMIT_BYTES * 0.9);
    // With an embedded notary each session takes two sides: four hosts hold eight large sessions, so seven warm.
    expect(defaultPoolSize({ cores: 64, totalMemoryBytes: 256 * GiB }, LARGE, { ...FOUR, embeddedNotary: true })).toBe(7);
    expect(defaultPoolSize({ cores: 64, totalMemoryBytes: 256 * GiB }, LARGE, FOUR)).toBe(15);
    expect(defaultPoolSize({ cores: 2, totalMemoryBytes: 24 * GiB }, LARGE, FOUR)).toBe(2);
    expect(defaultPoolSize({ cores: 8, totalMemoryBytes: 1 * GiB }, LARGE, FOUR)).toBe(1);
  });

  test("the ceiling counts warm sessions of the smallest class beside a live one of the largest; above it is refused; 0 turns the pool off", () => {
    const limits = { maxSentData: 4096, maxRecvData: 16384 };
    const smallest = { maxSentData: 1024, maxRecvData: 1536 };
    const ceiling = maxPoolSize(smallest, limits, ONE);
    // One host: (budget - one large side) / one small side.
    expect(ceiling).toBe(Math.floor((HOST_BUDGET_BYTES - sideEngineBytes(limits)) / sideEngineBytes(smallest)));
    expect(ceiling).toBeGreaterThan(maxPoolSize(limits, limits, ONE));
    expect(() => loadPoolConfig({ PROVER_POOL_SIZE: String(ceiling + 1) }, limits, ONE_HOST)).toThrow(`at most ${ceiling} (sessions of the smallest class, 1024/1536`);
    expect(loadPoolConfig({ PROVER_POOL_SIZE: String(ceiling) }, limits, ONE_HOST).size).toBe(ceiling);
    expect(loadPoolConfig({ PROVER_POOL_SIZE: "0" }, limits, ONE_HOST).size).toBe(0);
    // More hosts, more room; an embedded notary's side halves it.
    const three = { hosts: 3, embeddedNotary: false };
    expect(maxPoolSize(smallest, limits, three)).toBeGreaterThan(ceiling);
    expect(loadPoolConfig({ PROVER_POOL_SIZE: String(ceiling + 1) }, limits, { threads: 2, ...three }).size).toBe(ceiling + 1);
    expect(maxPoolSize(smallest, limits, { ...three, embeddedNotary: true })).toBeLessThan(maxPoolSize(smallest, limits, three));
  });

  test("pool config: hosts lower-cased and deduplicated, pool sizes default to the limits and may not exceed them", () => {
    const limits = { maxSentData: 4096, maxRecvData: 16384 };
    const config = loadPoolConfig({ PROVER_POOL_HOSTS: "API.example.com, api.example.com,b.test", PROVER_POOL_IDLE: "30s" }, limits, ONE_HOST);
    expect(config.hosts).toEqual(["api.example.com", "b.test"]);
    expect(config.sizes).toEqual(limits);
    expect(config.idleMs).toBe(30_000);
    expect(() => loadPoolConfig({ PROVER_POOL_MAX_RECV_DATA: "32768" }, limits, ONE_HOST)).toThrow("must not exceed");
    expect(() => loadPoolConfig({ PROVER_POOL_IDLE: "ten" }, limits, ONE_HOST)).toThrow("PROVER_POOL_IDLE");
    // Unset, a warm session waits an hour with the embedded notary (its timeout follows), 10 minutes for a remote one.
    expect(loadPoolConfig({}, limits, { ...ONE_HOST, embeddedNotary: true }).idleMs).toBe(3_600_000);
    expect(loadPoolConfig({}, limits, { ...ONE_HOST, embeddedNotary: false }).idleMs).toBe(600_000);
    expect(() => loadPoolConfig({ PROVER_POOL_HOSTS: "https://a.test/" }, limits, ONE_HOST)).toThrow("host names");
  });
});

describe("host shares and learning", () => {
  test("slots are dealt round-robin in priority order", () => {
    expect([...hostShares(3, ["a", "b"])]).toEqual([["a", 2], ["b", 1]]);
    expect([...hostShares(1, ["a", "b", "c"])]).toEqual([["a", 1]]);
    expect(hostShares(2, []).size).toBe(0);
  });

  test("learned hosts are most recent first, bounded, without configured hosts", () => {
    let learned: string[] = [];
    for (const host of ["a", "b", "a", "c", "conf", "d"]) learned = rememberHost(learned, host, ["conf"], 3);
    expect(learned).toEqual(["d", "c", "a"]);
    expect(rememberHost(["x"], "y", [], 0)).toEqual(["x"]);
  });

  test("the next refill serves the target with the fewest ready sessions, ties in priority order, only where there is room", () => {
    const targets = [
      { host: "a", count: 2, ready: 1 },
      { host: "b", count: 2, ready: 0 },
      { host: "c", count: 1, ready: 0 },
      { host: "d", count: 1, ready: 1 },
    ];
    const ready = (t: (typeof targets)[number]) => t.ready;
    expect(nextRefill(targets, ready, () => true)?.host).toBe("b");
    expect(nextRefill(targets, ready, (t) => t.host !== "b")?.host).toBe("c");
    expect(nextRefill(targets, ready, (t) => t.host === "a")?.host).toBe("a");
    // Full targets are never picked, even with room.
    expect(nextRefill(targets, ready, (t) => t.host === "d")).toBeUndefined();
    expect(nextRefill([], ready, () => true)).toBeUndefined();
  });

  test("backoff doubles from 1 s to a 60 s ceiling", () => {
    expect([0, 1, 2, 3, 7, 20].map(backoffMs)).toEqual([0, 1000, 2000, 4000, 60_000, 60_000]);
  });

  test("a refill's deadline: the session timeout until its class's setup is timed, then 4 times the slowest, at least 60 s", () => {
    expect(refillDeadlineMs(undefined, 300_000)).toBe(300_000);
    expect(refillDeadlineMs(10_000, 300_000)).toBe(60_000);
    expect(refillDeadlineMs(41_000, 300_000)).toBe(164_000);
    expect(refillDeadlineMs(90_000, 300_000)).toBe(300_000);
    expect(refillDeadlineMs(10_000, 20_000)).toBe(20_000);
  });

  test("sizes fit only when both directions fit", () => {
    expect(fitsIn(SMALL, LARGE)).toBe(true);
    expect(fitsIn({ maxSentData: 1024, maxRecvData: 20000 }, LARGE)).toBe(false);
  });
});

/** A pool over fake sessions whose setups the test completes or fails by hand; like real ones, they give up when their signal aborts. */
/** A pool whose setups the test settles by hand; with `pausedHost`, each setup runs in that (engine host's) time. */
function fakePool(overrides: Partial<PoolOptions> = {}, pausedHost?: PausedTime) {
  const setups: {
    host: string;
    sizes: typeof SMALL;
    signal?: AbortSignal;
    background?: BackgroundWork;
    resolve: () => void;
    reject: (e: Error) => void;
  }[] = [];
  const discarded: string[] = [];
  let counter = 0;
  const pool = createWarmPool({
    size: 1,
    sizes: SMALL,
    classes: [SMALL, LARGE],
    limits: LARGE,
    cpuSlots: 1,
    refillsYield: () => false,
    concurrentSetups: 1,
    hosts: ["a.test"],
    learnHosts: 2,
    idleMs: 60_000,
    sessionTimeoutMs: 300_000,
    setup: (host, sizes, signal, background) =>
      new Promise<ProverSession>((resolve, reject) => {
        const session: ProverSession = {
          notarySessionId: `s${++counter}`,
          serverName: host,
          sizes,
          engine: unusedEngine(),
          closed: false,
        };
        signal?.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
        if (pausedHost) background?.runsOn(pausedHost, () => {});
        setups.push({ host, sizes, signal, background, resolve: () => resolve(session), reject });
      }),
    discard(session) {
      closeProverSession(session);
      discarded.push(session.notarySessionId);
    },
    notaryReachable: async () => true,
    isAlive: async () => true,
    besideSetup: () => false,
    hasRoom: () => true,
    log: createLogger({ level: "error" }),
    ...overrides,
  });
  const settle = afterPendingWork;
  return { pool, setups, discarded, settle };
}

describe("warm pool", () => {
  test("a ready session whose notary side is gone is closed, and the request gets a fresh setup", async () => {
    const { pool, setups, discarded, settle } = fakePool({ isAlive: async (session) => session.notarySessionId !== "s1" });
    await settle();
    setups[0]!.resolve();
    await settle();
    expect(pool.status()).toMatchObject({ ready: 1 });

    const acquiring = pool.acquire("a.test", need());
    await settle();
    expect(discarded).toEqual(["s1"]);
    expect(setups).toHaveLength(2); // the dead one was not handed out: an on-demand setup runs
    setups[1]!.resolve();
    const session = await acquiring;
    expect(session.notarySessionId).toBe("s2");
    expect(pool.status()).toMatchObject({ expired: 1, served: { ready: 0, warming: 0, onDemand: 1 } });
  });

  test("warms the configured host, hands the warm session out, and refills only after it closes", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    expect(setups.map((s) => s.host)).toEqual(["a.test"]);
    expect(pool.status()).toMatchObject({ ready: 0, warming: 1 });
    setups[0]!.resolve();
    await settle();
    expect(pool.status()).toMatchObject({ ready: 1, warming: 0, inUse: 0 });

    const session = await pool.acquire("a.test", need());
    expect(session.notarySessionId).toBe("s1");
    await settle();
    expect(pool.status()).toMatchObject({ ready: 0, inUse: 1, warming: 0, served: { ready: 1, warming: 0, onDemand: 0 } });
    expect(setups).toHaveLength(1); // no refill while a request runs

    closeProverSession(session);
    await settle();
    expect(setups).toHaveLength(2);
    expect(pool.status()).toMatchObject({ inUse: 0, warming: 1 });
    pool.stop();
  });

  test("where refills yield, one starts as soon as a warm session is handed out, placed apart from it; never beside an on-demand setup", async () => {
    const { pool, setups, settle } = fakePool({ size: 2, refillsYield: () => true });
    for (let done = 0; done < 2; done++) {
      await settle();
      setups[done]!.resolve();
    }
    await settle();
    expect(pool.status()).toMatchObject({ ready: 2, warming: 0 });

    const session = await pool.acquire("a.test", need());
    await settle();
    expect(pool.status()).toMatchObject({ inUse: 1, warming: 1 });
    expect(setups[2]!.background?.apartFrom).toEqual([session.engine]);
    setups[2]!.resolve();
    await settle();

    // Both warm sessions taken (a refill starts), one request joins that refill, the next sets up on demand after it.
    const taken = [await pool.acquire("a.test", need()), await pool.acquire("a.test", need())];
    await settle();
    expect(setups).toHaveLength(4);
    const joined = pool.acquire("a.test", need());
    const onDemand = pool.acquire("a.test", need());
    await settle();
    setups[3]!.resolve();
    await settle();
    expect(setups).toHaveLength(5);
    // Four sessions in use and none warming: no refill beside the on-demand setup.
    expect(pool.status()).toMatchObject({ inUse: 4, ready: 0, warming: 0, setups: { running: 1, waiting: 0 } });
    await settle();
    expect(setups).toHaveLength(5);
    setups[4]!.resolve();
    for (const s of [session, ...taken, await joined, await onDemand]) closeProverSession(s);
    pool.stop();
  });

  test("after a burst, the host left with no ready session is refilled before one that still has a session", async () => {
    const { pool, setups, settle } = fakePool({ size: 4, hosts: ["a.test", "b.test"] });
    for (let done = 0; done < 4; done++) {
      await settle();
      setups[done]!.resolve();
    }
    await settle();
    expect(pool.status()).toMatchObject({ ready: 4, warming: 0 });
    const taken = [await pool.acquire("b.test", need()), await pool.acquire("b.test", need()), await pool.acquire("a.test", need())];
    for (const session of taken) closeProverSession(session);
    await settle();
    // a.test comes first in priority, but b.test has none left.
    expect(setups.slice(4).map((s) => s.host)).toEqual(["b.test"]);
    setups[4]!.resolve();
    await settle();
    // One ready each: priority order decides.
    expect(setups.slice(5).map((s) => s.host)).toEqual(["a.test"]);
  });

  test("a refill starts only where the engines have room beside a live full-size session; a smaller class fills meanwhile", async () => {
    let roomForLarge = false;
    const asked: string[] = [];
    const { pool, setups, settle } = fakePool({
      hasRoom: (sizes) => {
        asked.push(`${sizes.maxSentData}/${sizes.maxRecvData}`);
        return sizes.maxRecvData <= SMALL.maxRecvData || roomForLarge;
      },
    });
    // Pinned first in line, but no room for it: a.test's small session is warmed instead.
    pool.prepare("big.test", LARGE, 1);
    await settle();
    expect(asked).toContain("4096/16384");
    expect(setups.map((s) => [s.host, s.sizes])).toEqual([["a.test", SMALL]]);
    setups[0]!.resolve();
    await settle();
    expect(setups).toHaveLength(1);
    expect(pool.status().hosts.find((h) => h.host === "big.test")).toMatchObject({ ready: 0, warming: 0 });

    // Room comes back when a session ends: the next refill is the large one.
    const session = await pool.acquire("a.test", need());
    roomForLarge = true;
    closeProverSession(session);
    await settle();
    expect(setups.map((s) => [s.host, s.sizes])).toEqual([["a.test", SMALL], ["big.test", LARGE]]);
    pool.stop();
  });

  test("a request for the host being warmed takes that setup instead of starting a second one", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    const acquiring = pool.acquire("a.test", need());
    await settle();
    expect(setups).toHaveLength(1);
    setups[0]!.resolve();
    expect((await acquiring).notarySessionId).toBe("s1");
    expect(pool.status()).toMatchObject({ ready: 0, inUse: 1, served: { warming: 1 } });
    pool.stop();
  });

  test("a refill a request joined holds a setup turn: the next request's on-demand setup waits for it", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    const joined = pool.acquire("a.test", need());
    const next = pool.acquire("a.test", need());
    await settle();
    expect(setups).toHaveLength(1);
    expect(pool.status().setups).toEqual({ running: 1, waiting: 1 });
    setups[0]!.resolve();
    await settle();
    expect(setups).toHaveLength(2);
    expect(pool.status().setups).toEqual({ running: 1, waiting: 0 });
    setups[1]!.resolve();
    for (const session of [await joined, await next]) closeProverSession(session);
    expect(pool.status().served).toEqual({ ready: 0, warming: 1, onDemand: 1 });
    pool.stop();
  });

  test("an exchange bigger than the warm sessions gets an on-demand session of its setup sizes; the host is learned in its class", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 1 });
    await settle();
    expect(setups).toHaveLength(0); // nothing to warm before traffic
    const announced = { maxSentData: 1024, maxRecvData: 16384 };
    const acquiring = pool.acquire("b.test", { class: LARGE, fits: announced, setup: announced, reason: "announced" });
    await settle();
    expect(setups[0]).toMatchObject({ host: "b.test", sizes: announced });
    setups[0]!.resolve();
    closeProverSession(await acquiring);
    await settle();
    // After serving b.test, the pool keeps a session of the class its request needed warm for it.
    expect(setups[1]).toMatchObject({ host: "b.test", sizes: LARGE });
    expect(pool.status().hosts).toEqual([{ host: "b.test", class: "4096/16384", learned: true, pinned: false, share: 1, ready: 0, warming: 1 }]);
    expect(pool.status().served.onDemand).toBe(1);
    pool.stop();
  });

  test("a GET repeated in a bigger class: no refill of the class it outgrew starts in between", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 1 });
    await settle();
    const first = pool.acquire("b.test", need(SMALL));
    await settle();
    setups[0]!.resolve();
    const small = await first;
    // The engine's failure path closes the overflowed session; the error travels back through a few promise
    // hops to the exchange, which asks at once for a session of the class that fits.
    closeProverSession(small);
    for (let hop = 0; hop < 4; hop++) await Promise.resolve();
    const repeat = pool.acquire("b.test", need(LARGE));
    await settle();
    expect(setups.map((s) => s.sizes)).toEqual([SMALL, LARGE]);
    setups[1]!.resolve();
    closeProverSession(await repeat);
    await settle();
    // Once the repeat is over, the host is kept warm in the class it needed.
    expect(setups.map((s) => s.sizes)).toEqual([SMALL, LARGE, LARGE]);
    expect(pool.status().hosts).toMatchObject([{ host: "b.test", class: "4096/16384", warming: 1 }]);
    pool.stop();
  });

  test("requests without a warm session set up one at a time, in arrival order; no refill starts while one waits", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 2 });
    await settle();
    const first = pool.acquire("b.test", need(LARGE));
    const second = pool.acquire("c.test", need(SMALL));
    const third = pool.acquire("d.test", need(SMALL));
    await settle();
    expect(setups.map((s) => s.host)).toEqual(["b.test"]);
    expect(pool.status().setups).toEqual({ running: 1, waiting: 2 });

    setups[0]!.resolve();
    const firstSession = await first;
    await settle();
    // The next in line starts as soon as the setup before it is done, while the first request still runs.
    expect(setups.map((s) => s.host)).toEqual(["b.test", "c.test"]);
    expect(pool.status()).toMatchObject({ inUse: 1, setups: { running: 1, waiting: 1 } });
    closeProverSession(firstSession);
    await settle();
    // Requests still wait to set up: the pool does not compete with them.
    expect(setups.map((s) => s.host)).toEqual(["b.test", "c.test"]);

    setups[1]!.resolve();
    closeProverSession(await second);
    await settle();
    expect(setups.map((s) => s.host)).toEqual(["b.test", "c.test", "d.test"]);
    setups[2]!.resolve();
    closeProverSession(await third);
    await settle();
    // Only now do refills run: the two most recent hosts, one at a time.
    expect(setups.map((s) => s.host)).toEqual(["b.test", "c.test", "d.test", "d.test"]);
    expect(pool.status()).toMatchObject({ setups: { running: 0, waiting: 0 }, served: { onDemand: 3 } });
    pool.stop();
  });

  test("a request abandoned while it waits for its turn leaves the queue without a setup", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 1 });
    await settle();
    const first = pool.acquire("b.test", need());
    const abort = new AbortController();
    const waiting = pool.acquire("c.test", need(), abort.signal);
    const third = pool.acquire("d.test", need());
    await settle();
    expect(pool.status().setups).toEqual({ running: 1, waiting: 2 });
    abort.abort(new Error("session deadline"));
    await expect(waiting).rejects.toThrow("session deadline");
    expect(pool.status().setups).toEqual({ running: 1, waiting: 1 });

    setups[0]!.resolve();
    closeProverSession(await first);
    await settle();
    // c.test never set up; d.test, behind it, is next.
    expect(setups.map((s) => s.host)).toEqual(["b.test", "d.test"]);
    setups[1]!.resolve();
    closeProverSession(await third);
    expect(pool.status().served.onDemand).toBe(2);
    pool.stop();
  });

  test("a failed setup lets the next one in line start", async () => {
    const { pool, setups, settle } = fakePool({ hosts: [], size: 1 });
    await settle();
    const first = pool.acquire("b.test", need());
    const second = pool.acquire("c.test", need());
    await settle();
    setups[0]!.reject(new Error("notary refused"));
    await expect(first).rejects.toThrow("notary refused");
    await settle();
    expect(setups.map((s) => s.host)).toEqual(["b.test", "c.test"]);
    setups[1]!.resolve();
    closeProverSession(await second);
    pool.stop();
  });

  test("a refill past its deadline is given up as stalled and backs off; a request that joined it sets up its own", async () => {
    // No setup of the class timed yet: the deadline is the session timeout.
    const { pool, setups, settle } = fakePool({ sessionTimeoutMs: 100 });
    await settle();
    const joined = pool.acquire("a.test", need());
    await settle();
    expect(setups).toHaveLength(1);
    expect(await eventually(() => setups.length, (n) => n === 2, 5_000)).toBe(2);
    expect(setups[0]!.signal?.aborted).toBe(true);
    const status = pool.status();
    expect(status).toMatchObject({ warming: 0, failures: 1, setups: { running: 1, waiting: 0 } });
    expect(status.lastError).toBe("warming a 1024/4096 session took longer than 100 ms: given up as stalled");
    setups[1]!.resolve();
    expect((await joined).notarySessionId).toBe("s2");
    expect(pool.status().served).toEqual({ ready: 0, warming: 0, onDemand: 1 });
    pool.stop();
  });

  test("a refill's deadline counts only the time its setup ran: time paused for live work does not count", async () => {
    const deadlineMs = 200;
    // The refill starts on an engine host already paused (it starts running when the host resumes): the time it
    // runs before the pause is nil however late this thread runs, so no figure of this test depends on the load.
    const hostPaused = new PausedTime();
    hostPaused.pause();
    const { pool, setups, settle } = fakePool({ sessionTimeoutMs: deadlineMs }, hostPaused);
    await settle();
    const refill = setups[0]!;
    expect(refill.background).toBeInstanceOf(BackgroundWork);
    // Paused for longer than the whole deadline: its check, due by then, ran and did not give the refill up.
    await afterTimersDue(deadlineMs);
    expect(refill.background!.pausedMs()).toBeGreaterThanOrEqual(deadlineMs);
    expect(refill.signal!.aborted).toBe(false);
    hostPaused.resume();
    const resumed = performance.now();
    expect(await eventually(() => refill.signal!.aborted, (aborted) => aborted, 10_000)).toBe(true);
    // The whole deadline still had to run after the pause.
    expect(performance.now() - resumed).toBeGreaterThanOrEqual(deadlineMs - 1);
    expect(pool.status().lastError).toBe(`warming a 1024/4096 session took longer than ${deadlineMs} ms: given up as stalled`);
    pool.stop();
  });

  test("a request that joins a refill makes it live: its engine is told, and it may no longer be paused", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    const refill = setups[0]!;
    let told = 0;
    refill.background!.runsOn(new PausedTime(), () => told++);
    expect(refill.background!.live).toBe(false);
    const joined = pool.acquire("a.test", need());
    await settle();
    expect(refill.background!.live).toBe(true);
    expect(told).toBe(1);
    refill.resolve();
    expect((await joined).notarySessionId).toBe("s1");
    expect(pool.status().served).toEqual({ ready: 0, warming: 1, onDemand: 0 });
    pool.stop();
  });

  test("a request abandoned during its on-demand setup gives that setup up and its turn back", async () => {
    const { pool, setups, settle } = fakePool({ size: 0 });
    const abort = new AbortController();
    const acquiring = pool.acquire("a.test", need(), abort.signal);
    await settle();
    expect(setups).toHaveLength(1);
    abort.abort(new Error("the session took too long"));
    await expect(acquiring).rejects.toThrow("the session took too long");
    expect(setups[0]!.signal?.aborted).toBe(true);
    await settle();
    expect(pool.status().setups).toEqual({ running: 0, waiting: 0 });
    pool.stop();
  });

  test("a newer learned host takes the slot: the older host's warm session is closed", async () => {
    const { pool, setups, discarded, settle } = fakePool({ hosts: [], size: 1 });
    const first = pool.acquire("b.test", need());
    await settle();
    setups[0]!.resolve();
    closeProverSession(await first);
    await settle();
    setups[1]!.resolve(); // warm for b.test
    await settle();
    expect(pool.status().ready).toBe(1);

    const second = pool.acquire("c.test", need());
    await settle();
    setups[2]!.resolve();
    closeProverSession(await second);
    await settle();
    expect(discarded).toContain("s2");
    expect(setups[3]?.host).toBe("c.test");
    pool.stop();
  });

  test("a failing notary backs off and never reaches requests; on-demand errors are reported as they are", async () => {
    const { pool, setups, settle } = fakePool();
    await settle();
    setups[0]!.reject(new Error("notary down"));
    await settle();
    const status = pool.status();
    expect(status).toMatchObject({ warming: 0, failures: 1, lastError: "notary down" });
    expect(status.retryInMs).toBeGreaterThan(500);

    const acquiring = pool.acquire("a.test", need());
    await settle();
    expect(setups).toHaveLength(2); // on demand, not waiting for the backoff
    setups[1]!.reject(new Error("still down"));
    await expect(acquiring).rejects.toThrow("still down");

    // The retry after the backoff: waited for as a state, not by out-sleeping the backoff timer.
    expect(await eventually(() => setups.length, (n) => n === 3, 10_000)).toBe(3);
    setups[2]!.resolve();
    await settle();
    expect(pool.status()).toMatchObject({ ready: 1, failures: 0, lastError: null });
    pool.stop();
  });

  test("idle sessions are discarded (freeing the notary side) and replaced", async () => {
    const { pool, setups, discarded, settle } = fakePool({ idleMs: 30 });
    await settle();
    setups[0]!.resolve();
    expect(await eventually(() => setups.length, (n) => n === 2, 10_000)).toBe(2);
    expect(discarded).toEqual(["s1"]);
    expect(pool.status()).toMatchObject({ expired: 1, warming: 1 });
    expect(setups).toHaveLength(2);
    pool.stop();
  });

  test("size 0: nothing is warmed or learned, every request sets its own session up", async () => {
    const { pool, setups, settle } = fakePool({ size: 0 });
    const acquiring = pool.acquire("a.test", need());
    await settle();
    setups[0]!.resolve();
    closeProverSession(await acquiring);
    await settle();
    expect(setups).toHaveLength(1);
    expect(pool.status()).toMatchObject({ ready: 0, warming: 0, served: { onDemand: 1 } });
    pool.stop();
  });

  test("stop closes ready sessions and refuses new requests", async () => {
    const { pool, setups, discarded, settle } = fakePool();
    await settle();
    setups[0]!.resolve();
    await settle();
    pool.stop();
    expect(discarded).toEqual(["s1"]);
    await expect(pool.acquire("a.test", need())).rejects.toThrow("shutting down");
  });
});

describe("an on-demand setup whose notary socket dropped", () => {
  const dropped = () => new SetupFailed(new Error("uid_mux::yamux: not connected"));
  const fresh = { attempts: 1, stopped: false, abandoned: false, remainingMs: 250_000, slowestSetupMs: 40_000 };

  test("is run once more only after an engine failure, once, while the request runs and has time for another setup", () => {
    expect(maySetupAgain(dropped(), fresh)).toBe(true);
    // The message a client sees is the one it saw before.
    expect(dropped()).toMatchObject({ code: "notary_unavailable", message: "MPC setup with the notary failed: uid_mux::yamux: not connected" });
    // The notary found gone during the setup fails it with its notary too: another notary, if one answers, may take it.
    const gone = new SetupFailed(new AppError("notary_unavailable", "the notary went away during the session"));
    expect(gone).toMatchObject({ code: "notary_unavailable", message: "MPC setup with the notary failed: the notary went away during the session" });
    expect(maySetupAgain(gone, fresh)).toBe(true);
    // A deadline, a full engine, a failure that is not the setup's with its notary: not run again.
    expect(maySetupAgain(new AppError("notary_unavailable", "no notary can be reached"), fresh)).toBe(false);
    expect(maySetupAgain(new AppError("session_timeout", "the session took longer than 300000 ms"), fresh)).toBe(false);
    expect(maySetupAgain(new AppError("over_capacity", "no engine host has room"), fresh)).toBe(false);
    expect(maySetupAgain(new Error("uid_mux::yamux: not connected"), fresh)).toBe(false);
    expect(maySetupAgain(dropped(), { ...fresh, attempts: 2 })).toBe(false);
    expect(maySetupAgain(dropped(), { ...fresh, stopped: true })).toBe(false);
    expect(maySetupAgain(dropped(), { ...fresh, abandoned: true })).toBe(false);
    // Time left for the class's slowest setup plus 30 s for the exchange; 60 s assumed before one was timed.
    expect(maySetupAgain(dropped(), { ...fresh, remainingMs: 70_000 })).toBe(true);
    expect(maySetupAgain(dropped(), { ...fresh, remainingMs: 69_999 })).toBe(false);
    expect(maySetupAgain(dropped(), { ...fresh, remainingMs: 89_999, slowestSetupMs: undefined })).toBe(false);
    expect(maySetupAgain(dropped(), { ...fresh, remainingMs: 90_000, slowestSetupMs: undefined })).toBe(true);
    expect(maySetupAgain(dropped(), { ...fresh, remainingMs: undefined })).toBe(true);
  });

  test("the pool sets it up once more, in the same turn, counts it, and hands the second session out", async () => {
    const { pool, setups, settle } = fakePool({ size: 0 });
    const acquiring = pool.acquire("a.test", need(), undefined, performance.now() + 300_000);
    await settle();
    setups[0]!.reject(dropped());
    await settle();
    expect(setups).toHaveLength(2);
    expect(pool.status().setups).toEqual({ running: 1, waiting: 0 });
    setups[1]!.resolve();
    expect((await acquiring).notarySessionId).toBe("s2");
    expect(pool.status()).toMatchObject({ setupRetries: 1, served: { onDemand: 1 } });
    pool.stop();
  });

  test("a second failure is the request's failure: no third setup", async () => {
    const { pool, setups, settle } = fakePool({ size: 0 });
    const acquiring = pool.acquire("a.test", need());
    await settle();
    setups[0]!.reject(dropped());
    await settle();
    setups[1]!.reject(new SetupFailed(new Error("unexpected end of file")));
    await expect(acquiring).rejects.toThrow("MPC setup with the notary failed: unexpected end of file");
    await settle();
    expect(setups).toHaveLength(2);
    expect(pool.status().setupRetries).toBe(1);
    pool.stop();
  });

  test("not run again while the notary does not answer, for an abandoned request, once stopping, or without time left", async () => {
    let abandon = new AbortController();
    const refusals: [string, Partial<PoolOptions>, (pool: ReturnType<typeof fakePool>["pool"]) => void, number?][] = [
      ["notary down", { notaryReachable: async () => false }, () => {}],
      ["abandoned while the notary was asked", { notaryReachable: async () => (abandon.abort(new AppError("session_timeout", "late")), true) }, () => {}],
      ["stopping", {}, (pool) => pool.stop()],
      ["no time left", {}, () => {}, 60_000],
    ];
    for (const [why, overrides, before, remainingMs = 300_000] of refusals) {
      abandon = new AbortController();
      const { pool, setups, settle } = fakePool({ size: 0, ...overrides });
      const acquiring = pool.acquire("a.test", need(), abandon.signal, performance.now() + remainingMs);
      acquiring.catch(() => {});
      await settle();
      before(pool);
      setups[0]!.reject(dropped());
      await expect(acquiring, why).rejects.toThrow();
      await settle();
      expect(setups.length, why).toBe(1);
      expect(pool.status().setupRetries, why).toBe(0);
      pool.stop();
    }
  });
});

describe("live sessions beside the pool", () => {
  const small = { maxSentData: 1024, maxRecvData: 4096 };
  const large = { maxSentData: 4096, maxRecvData: 16384 };

  test("as many full-size sessions as the engines hold, up to the CPU-bound cap of 4", () => {
    expect(maxLiveSessions(small, ONE)).toBe(4);
    expect(maxLiveSessions(large, { hosts: 1, embeddedNotary: true })).toBe(2);
    expect(maxLiveSessions(large, { hosts: 8, embeddedNotary: false })).toBe(4);
    for (const engines of [ONE, FOUR, { hosts: 1, embeddedNotary: true }, { hosts: 4, embeddedNotary: true }]) {
      const live = maxLiveSessions(large, engines);
      // Every host within its budget, the sessions spread over them.
      expect(Math.ceil(live / engines.hosts) * sessionCost(engines, large)).toBeLessThanOrEqual(HOST_BUDGET_BYTES);
    }
  });

  test("each engine host adds room; an embedded notary's side takes its share of it", () => {
    expect(maxLiveSessions(large, { hosts: 1, embeddedNotary: true })).toBe(2);
    expect(maxLiveSessions(large, { hosts: 2, embeddedNotary: true })).toBe(4);
    expect(hostedSessions({ hosts: 8, embeddedNotary: false }, large)).toBe(8 * Math.floor(HOST_BUDGET_BYTES / sideEngineBytes(large)));
    expect(hostedSessions({ hosts: 8, embeddedNotary: true }, large)).toBe(8 * Math.floor(HOST_BUDGET_BYTES / (2 * sideEngineBytes(large))));
  });
});
