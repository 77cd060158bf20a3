import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { BackgroundWork } from "../../../src/engine/background.ts";
import { EngineHosts, type EngineHostsOptions } from "../../../src/engine/host/engine-hosts.ts";
import { HOST_BUDGET_BYTES } from "../../../src/engine/host/placement.ts";
import { sideEngineBytes } from "../../../src/engine/memory.ts";
import { AppError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/base/log.ts";
import { eventually } from "../../../testkit/wait.ts";
import { startLoopbackBridge } from "../../../src/engine/bridge.ts";
import { type NotarySessions, setupProverSession } from "../../../src/engine/session.ts";
import { startNotaryServer } from "../../../src/app/notary.ts";
import { generateKey } from "../../../src/proof/keys.ts";
import { createNotaryClient } from "../../../src/prover/notary/client.ts";
import { getFromTarget } from "../../../testkit/engine-exchange.ts";
import { TEST_SESSION, tlsFixture } from "../../../testkit/env.ts";
import { isRunning, processState } from "../../../testkit/process.ts";
import { startTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";

/**
 * Real engine host processes (`cli engine-host`, each loading the wasm): placement and memory limits, and hung
 * calls, made by a peer that accepts the engine's WebSocket and never says a word, without MPC; a refill yielding
 * to a request's exchange, with real MPC sessions through a real notary and a local TLS target.
 */
const LARGE = { maxSentData: 4096, maxRecvData: 16384 };
const log = createLogger({ level: "error" });
const started: EngineHosts[] = [];
const hostsOf = async (options: Partial<EngineHostsOptions> = {}) => {
  const hosts = new EngineHosts({ count: 1, embeddedNotary: false, threads: 1, hangMs: 300, pauseRefills: true, log, ...options });
  started.push(hosts);
  await hosts.started();
  return hosts;
};
/** WebSockets the silent peer has accepted: an engine call dialing it has reached the engine. */
let silentSockets = 0;
const silentNotary = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request, server) => (server.upgrade(request) ? undefined : new Response("websocket expected", { status: 400 })),
  websocket: { open: () => void silentSockets++, message() {} },
});
/** Waits until the engine has dialed the silent peer once more than `before`. */
const dialed = async (before: number) => expect(await eventually(() => silentSockets, (n) => n > before, 20_000)).toBe(before + 1);
const refusal = (work: () => unknown): AppError => {
  try {
    work();
  } catch (error) {
    return error as AppError;
  }
  throw new Error("expected a refusal");
};

afterAll(async () => {
  await Promise.all(started.map((hosts) => hosts.stop()));
  silentNotary.stop(true);
});

describe("engine hosts", () => {
  test("no host runs before the first session is placed: then all start at once; room was counted in them before", async () => {
    const hosts = new EngineHosts({ count: 2, embeddedNotary: false, threads: 1, hangMs: 300, pauseRefills: true, log });
    started.push(hosts);
    const perHost = Math.floor(HOST_BUDGET_BYTES / sideEngineBytes(LARGE));
    expect(hosts.status()).toEqual([]);
    expect(hosts.fitsBeside(Array.from({ length: 2 * perHost }, () => LARGE))).toBe(true);
    expect(hosts.fitsBeside(Array.from({ length: 2 * perHost + 1 }, () => LARGE))).toBe(false);
    const prover = hosts.create("a.test", LARGE);
    expect(hosts.status().map((h) => h.sessions).sort()).toEqual([0, 1]);
    await hosts.started();
    expect(hosts.status().map((h) => isRunning(h.pid) && h.diesWithParent)).toEqual([true, true]);
    prover.free();
  }, 30_000);

  test("a host that ends before it answered its start is started again after a pause, not counted as died; its calls fail clearly", async () => {
    const hosts = new EngineHosts({ count: 1, embeddedNotary: false, threads: 1, hangMs: 300, pauseRefills: true, log });
    started.push(hosts);
    const prover = hosts.create("a.test", LARGE);
    const [first] = hosts.status();
    process.kill(first!.pid, "SIGKILL");
    await expect(prover.setup(`ws://127.0.0.1:${silentNotary.port}/`)).rejects.toThrow("the engine host stopped (ended by SIGKILL)");
    expect(refusal(() => hosts.create("a.test", LARGE))).toMatchObject({ code: "over_capacity", message: "no engine host is running: one is being started again" });
    const after = await eventually(() => hosts.status(), (s) => s.length === 1 && s[0]!.pid !== first!.pid, 20_000);
    expect(after[0]).toMatchObject({ sessions: 0, retiring: false });
    expect(hosts.replaced).toEqual({ hung: 0, died: 0 });
    await hosts.started();
    prover.free();
  }, 30_000);

  test("sessions spread over the hosts, each within its budget; with no room left: over_capacity; freeing makes room", async () => {
    const hosts = await hostsOf({ count: 2 });
    const perHost = Math.floor(HOST_BUDGET_BYTES / sideEngineBytes(LARGE));
    const provers = Array.from({ length: 2 * perHost }, () => hosts.create("a.test", LARGE));
    expect(hosts.status().map((h) => h.sessions)).toEqual([perHost, perHost]);
    expect(new Set(hosts.status().map((h) => h.pid)).size).toBe(2);
    const full = refusal(() => hosts.create("a.test", LARGE));
    expect(full).toBeInstanceOf(AppError);
    expect(full).toMatchObject({ code: "over_capacity", message: "no engine host has room for another session of this size" });
    expect(hosts.fitsBeside([LARGE])).toBe(false);
    provers[0]!.free();
    provers[0]!.free(); // twice: nothing more happens
    expect(hosts.status().map((h) => h.sessions).sort()).toEqual([perHost - 1, perHost]);
    expect(hosts.fitsBeside([LARGE])).toBe(true);
    hosts.create("a.test", LARGE);
    expect(hosts.status().map((h) => h.sessions)).toEqual([perHost, perHost]);
  }, 30_000);

  test("a refill's prover goes apart from the sessions requests hold, where there is room", async () => {
    const hosts = await hostsOf({ count: 2 });
    const held = hosts.create("a.test", LARGE);
    hosts.create("a.test", LARGE);
    expect(hosts.status().map((h) => h.sessions)).toEqual([1, 1]);
    // Equal hosts: the first would take it, but it holds the request's session.
    hosts.create("b.test", LARGE, new BackgroundWork([held]));
    expect(hosts.status().map((h) => h.sessions)).toEqual([1, 2]);
    // Room decides again once only the other host can take it.
    const perHost = Math.floor(HOST_BUDGET_BYTES / sideEngineBytes(LARGE));
    for (let more = 2; more < perHost; more++) hosts.create("c.test", LARGE, new BackgroundWork([held]));
    expect(hosts.status().map((h) => h.sessions)).toEqual([1, perHost]);
    hosts.create("d.test", LARGE, new BackgroundWork([held]));
    expect(hosts.status().map((h) => h.sessions)).toEqual([2, perHost]);
  }, 30_000);

  test("with an embedded notary a prover holds room for its session's Verifier, which goes to the prover's host", async () => {
    const hosts = await hostsOf({ count: 2, embeddedNotary: true });
    const perHost = Math.floor(HOST_BUDGET_BYTES / (2 * sideEngineBytes(LARGE)));
    const provers = Array.from({ length: 2 * perHost }, () => hosts.create("a.test", LARGE));
    expect(hosts.status().map((h) => h.reservedBytes)).toEqual([perHost, perHost].map((n) => n * 2 * sideEngineBytes(LARGE)));
    expect(refusal(() => hosts.create("a.test", LARGE))).toMatchObject({ code: "over_capacity", message: "no engine host has room for another session of this size" });
    expect(hosts.fitsBeside([LARGE])).toBe(false);
    // The setup names the notary session: its Verifier joins the prover, in the room already held.
    const last = provers.at(-1)!;
    last.setup(`ws://127.0.0.1:${silentNotary.port}/notarize?sessionId=s-last`).catch(() => {});
    const before = hosts.status();
    hosts.verifiers.create(LARGE, "s-last");
    const after = hosts.status();
    const grown = after.filter((h, i) => h.sessions === before[i]!.sessions + 1);
    expect(grown).toHaveLength(1);
    expect(after.map((h) => h.reservedBytes)).toEqual(before.map((h) => h.reservedBytes));
    // A Verifier whose prover is unknown is placed at its own cost, where there is room: here none.
    expect(refusal(() => hosts.verifiers.create(LARGE, "no-such-session"))).toMatchObject({ code: "over_capacity" });
    provers[0]!.free();
    expect(hosts.fitsBeside([LARGE])).toBe(true);
  }, 30_000);

  test("a Verifier whose call never ends (its prover never speaks): its host is retired, replaced and ended", async () => {
    const hosts = await hostsOf({ embeddedNotary: true });
    const [first] = hosts.status();
    const verifier = hosts.verifiers.create(LARGE, "no-such-session");
    let connected!: () => void;
    const reading = new Promise<void>((resolve) => (connected = resolve));
    const verified = verifier.verify(`ws://127.0.0.1:${silentNotary.port}/`, connected);
    verified.catch(() => {});
    await reading;
    verifier.abandon();
    const after = await eventually(() => hosts.status(), (s) => s.length === 1 && s[0]!.pid !== first!.pid, 20_000);
    expect(after[0]).toMatchObject({ sessions: 0, retiring: false });
    expect(hosts.replaced).toEqual({ hung: 1, died: 0 });
    expect(await eventually(() => isRunning(first!.pid), (running) => !running, 10_000)).toBe(false);
    await expect(verified).rejects.toThrow("the engine host stopped (ended by SIGKILL)");
  }, 30_000);

  test("a call that never ends: its host is retired and replaced at once, and ended when its other sessions are over", async () => {
    const hosts = await hostsOf();
    const [first] = hosts.status();
    const hung = hosts.create("a.test", LARGE);
    const other = hosts.create("a.test", LARGE);
    const sockets = silentSockets;
    const setup = hung.setup(`ws://127.0.0.1:${silentNotary.port}/`);
    setup.catch(() => {});
    await dialed(sockets);
    hung.abandon();
    // After hangMs the host retires: no new sessions there, a replacement starts.
    const retired = await eventually(() => hosts.status(), (s) => s.length === 2 && !s.some((h) => h.pid === first!.pid && !h.retiring), 20_000);
    expect(retired.find((h) => h.pid === first!.pid)).toMatchObject({ retiring: true, hung: 1, sessions: 1 });
    expect(hosts.replaced).toEqual({ hung: 1, died: 0 });
    const placed = hosts.create("a.test", LARGE);
    expect(hosts.status().find((h) => h.pid !== first!.pid)).toMatchObject({ sessions: 1, retiring: false });
    // Its other session still runs there; once it is over, the host ends and its memory with it.
    expect(isRunning(first!.pid)).toBe(true);
    other.free();
    expect(await eventually(() => isRunning(first!.pid), (running) => !running, 10_000)).toBe(false);
    await expect(setup).rejects.toThrow("the engine host stopped (ended by SIGKILL)");
    expect(hosts.status()).toHaveLength(1);
    placed.free();
  }, 30_000);

  test("a host stopped when its prover is killed ends with it: the kernel kills it with its parent", async () => {
    const parent = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "..", "testkit", "host-parent.ts")], { stdout: "pipe", stderr: "ignore" });
    const { value } = await parent.stdout.getReader().read();
    const { host, diesWithParent } = JSON.parse(new TextDecoder().decode(value)) as { host: number; diesWithParent: boolean };
    expect(diesWithParent).toBe(true);
    try {
      process.kill(host, "SIGSTOP");
      expect(await eventually(() => processState(host), (state) => state === "T", 5_000)).toBe("T");
    } finally {
      parent.kill("SIGKILL");
    }
    // Gone, or a zombie nobody reaps here: either way it runs no more and its memory is back.
    const ended = () => !isRunning(host) || processState(host) === "Z";
    expect(await eventually(ended, (done) => done, 10_000)).toBe(true);
  }, 30_000);

  test("a host that dies is replaced; the calls it was running fail with a clear error", async () => {
    const hosts = await hostsOf();
    const [first] = hosts.status();
    const prover = hosts.create("a.test", LARGE);
    const sockets = silentSockets;
    const setup = prover.setup(`ws://127.0.0.1:${silentNotary.port}/`);
    await dialed(sockets);
    process.kill(first!.pid, "SIGKILL");
    await expect(setup).rejects.toThrow("the engine host stopped (ended by SIGKILL)");
    const after = await eventually(() => hosts.status(), (s) => s.length === 1 && s[0]!.pid !== first!.pid, 20_000);
    expect(after[0]!.pid).not.toBe(first!.pid);
    expect(hosts.replaced).toEqual({ hung: 0, died: 1 });
    prover.free();
    hosts.create("a.test", LARGE).free();
  }, 30_000);

  test(
    "with an embedded notary, a refill's host is stopped while a request's exchange runs in another; its clocks stop meanwhile (real MPC)",
    async () => {
      const tls = tlsFixture();
      const hosts = await hostsOf({ count: 2, embeddedNotary: true, threads: 2, testTrustAnchorPem: tls.caPem });
      const notary = startNotaryServer({
        verifiers: hosts.verifiers,
        host: "127.0.0.1",
        port: 0,
        sessions: { concurrency: 4, ...TEST_SESSION, timeoutMs: 600_000, connectTimeoutMs: 30_000 },
        key: generateKey("secp256k1"),
        testTrustAnchor: true,
        log,
      });
      const target = startTarget(tls);
      const bridge = startLoopbackBridge();
      const client = createNotaryClient(notary.url);
      const created: string[] = [];
      const sessions: NotarySessions = {
        createSession: async (sizes) => {
          const id = await client.createSession("mpc", sizes);
          created.push(id);
          return id;
        },
        notarizeUrl: (id) => client.socketUrl("mpc", id),
        release: (id) => client.release("mpc", id),
      };
      try {
        // A request's session (set up on demand: setups never pause a refill), then a refill beside it.
        const live = await setupProverSession(sessions, hosts, TARGET_HOST, TEST_SESSION);
        const work = new BackgroundWork();
        const refilling = setupProverSession(sessions, hosts, TARGET_HOST, TEST_SESSION, { background: work });
        const [liveHost, refillHost] = hosts.status().map((h) => h.pid);
        expect([hosts.besideSetup(live.engine), hosts.status().map((h) => h.paused)]).toEqual([false, [false, false]]);

        // The exchange (the target answers after 4 s) runs in the first host: the second, running only the refill, stops.
        const exchange = getFromTarget(live, bridge, target.port!, "/slow?ms=4000");
        expect(await eventually(() => processState(refillHost!), (state) => state === "T", 10_000)).toBe("T");
        expect(hosts.status().map((h) => h.paused)).toEqual([false, true]);
        expect(processState(liveHost!)).not.toBe("T");
        // A call abandoned in the stopped host cannot end there, so its hang clock waits too.
        const stray = hosts.verifiers.create(TEST_SESSION, created[1]!);
        stray.verify(`ws://127.0.0.1:${silentNotary.port}/`, () => {}).catch(() => {});
        const pausedAtAbandon = work.pausedMs();
        stray.abandon();
        // Paused for three times its hang time (300 ms) since, the stray call is not counted as hung.
        const pausedSince = () => work.pausedMs() - pausedAtAbandon;
        expect(await eventually(pausedSince, (ms) => ms >= 900, 10_000)).toBeGreaterThanOrEqual(900);
        expect(hosts.status().map((h) => h.paused)).toEqual([false, true]);
        expect(hosts.replaced).toEqual({ hung: 0, died: 0 });

        // The exchange over, the refill's host goes on; the refill's clock stops counting pauses.
        expect((await exchange).response.status).toBe(200);
        expect(hosts.status().map((h) => h.paused)).toEqual([false, false]);
        expect(processState(refillHost!)).not.toBe("T");
        const pausedFor = work.pausedMs();
        expect(hosts.status()[1]!.pausedMs).toBeGreaterThanOrEqual(Math.floor(pausedFor));
        // Running again, the stray call gets its 300 ms and its host is retired as hung; the refill still ends well.
        expect(await eventually(() => hosts.replaced.hung, (n) => n === 1, 10_000)).toBe(1);
        const refilled = await refilling;
        expect(work.pausedMs()).toBe(pausedFor);
        live.engine.free();
        refilled.engine.free();
      } finally {
        bridge.stop();
        target.stop(true);
        await notary.stop(0);
      }
    },
    120_000,
  );
});
