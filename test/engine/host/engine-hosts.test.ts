import { afterAll, describe, expect, test } from "bun:test";
import { EngineHosts } from "../../../src/engine/host/engine-hosts.ts";
import { AppError } from "../../../src/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { eventually } from "../../support/wait.ts";
import { isRunning } from "../../support/process.ts";

/**
 * Real engine host processes (`cli engine-host`, each loading the wasm), without MPC: placement and memory
 * limits, and a hung call, made by a "notary" that accepts the engine's WebSocket and never says a word.
 */
const LARGE = { maxSentData: 4096, maxRecvData: 16384 };
const log = createLogger({ level: "error" });
const started: EngineHosts[] = [];
const hostsOf = async (options: Partial<Parameters<typeof EngineHosts.start>[0]> = {}) => {
  const hosts = await EngineHosts.start({ count: 1, embeddedNotary: false, threads: 1, hangMs: 300, log, ...options });
  started.push(hosts);
  return hosts;
};
const silentNotary = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request, server) => (server.upgrade(request) ? undefined : new Response("websocket expected", { status: 400 })),
  websocket: { message() {} },
});
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
  test("sessions spread over the hosts, each within its budget; with no room left: over_capacity; freeing makes room", async () => {
    const hosts = await hostsOf({ count: 2 });
    const provers = Array.from({ length: 4 }, () => hosts.create("a.test", LARGE));
    expect(hosts.status().map((h) => h.sessions)).toEqual([2, 2]);
    expect(new Set(hosts.status().map((h) => h.pid)).size).toBe(2);
    const full = refusal(() => hosts.create("a.test", LARGE));
    expect(full).toBeInstanceOf(AppError);
    expect(full).toMatchObject({ code: "over_capacity", message: "no engine host has room for another session of this size" });
    provers[0]!.free();
    provers[0]!.free(); // twice: nothing more happens
    expect(hosts.status().map((h) => h.sessions).sort()).toEqual([1, 2]);
    hosts.create("a.test", LARGE);
    expect(hosts.status().map((h) => h.sessions)).toEqual([2, 2]);
  }, 30_000);

  test("an embedded notary's one engine bounds the sessions of all hosts together", async () => {
    const hosts = await hostsOf({ count: 3, embeddedNotary: true });
    // Three hosts hold six large provers, the notary's engine four verifiers.
    for (let i = 0; i < 4; i++) hosts.create("a.test", LARGE);
    expect(refusal(() => hosts.create("a.test", LARGE))).toMatchObject({
      code: "over_capacity",
      message: "the embedded notary's engine has no room for another session of this size",
    });
  }, 30_000);

  test("a call that never ends: its host is retired and replaced at once, and ended when its other sessions are over", async () => {
    const hosts = await hostsOf();
    const [first] = hosts.status();
    const hung = hosts.create("a.test", LARGE);
    const other = hosts.create("a.test", LARGE);
    const setup = hung.setup(`ws://127.0.0.1:${silentNotary.port}/`);
    setup.catch(() => {});
    await Bun.sleep(500);
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

  test("a host that dies is replaced; the calls it was running fail with a clear error", async () => {
    const hosts = await hostsOf();
    const [first] = hosts.status();
    const prover = hosts.create("a.test", LARGE);
    const setup = prover.setup(`ws://127.0.0.1:${silentNotary.port}/`);
    await Bun.sleep(300);
    process.kill(first!.pid, "SIGKILL");
    await expect(setup).rejects.toThrow("the engine host stopped (ended by SIGKILL)");
    const after = await eventually(() => hosts.status(), (s) => s.length === 1 && s[0]!.pid !== first!.pid, 20_000);
    expect(after[0]!.pid).not.toBe(first!.pid);
    expect(hosts.replaced).toEqual({ hung: 0, died: 1 });
    prover.free();
    hosts.create("a.test", LARGE).free();
  }, 30_000);
});
