/**
 * MPC's sized exchange over a pool of stand-in sessions (no engine): which session it takes, what it learns of the
 * endpoint's answer, when an answer that overflowed its session is fetched once more in a bigger class, and that
 * everything it took is given back. The engine's real overflow is test/prover/mpc/pool/pool-sized.e2e.test.ts's.
 */
import { describe, expect, test } from "bun:test";
import type { LoopbackBridge, TcpHandle } from "../../../src/engine/bridge.ts";
import type { EngineExchange, EngineProver } from "../../../src/engine/prover.ts";
import type { ProverSession } from "../../../src/engine/session.ts";
import { AppError } from "../../../src/core/errors.ts";
import type { ExchangeRequest } from "../../../src/core/exchange.ts";
import type { SessionSizes } from "../../../src/core/session-sizes.ts";
import { createLogger } from "../../../src/base/log.ts";
import { EndpointSizes } from "../../../src/prover/mpc/pool/endpoint-sizes.ts";
import type { SessionSource } from "../../../src/prover/mpc/pool/pool.ts";
import type { SessionNeed } from "../../../src/prover/mpc/pool/size-classes.ts";
import { createTurnGate } from "../../../src/prover/mpc/pool/turn-gate.ts";
import { type ExchangeHolder, type Sizing, runSizedExchange } from "../../../src/prover/mpc/sized-exchange.ts";
import { startControl } from "../../../src/prover/proving/run-control.ts";

const SMALL: SessionSizes = { maxSentData: 1024, maxRecvData: 2048 };
const MIDDLE: SessionSizes = { maxSentData: 1024, maxRecvData: 8192 };
const LARGE: SessionSizes = { maxSentData: 4096, maxRecvData: 16384 };
const CLASSES = [SMALL, MIDDLE, LARGE];
const REQUEST: ExchangeRequest = { method: "GET", pathAndQuery: "/data", headers: [["host", "api.example"]], body: undefined };
const TARGET = { serverName: "api.example", address: "127.0.0.1", port: 443 };
const ENDPOINT = "GET api.example:443/data";

/**
 * What a stand-in session's exchange does: answer with this many bytes, overflow its session at this many (in the
 * engine's words), or fail with other words of the engine's.
 */
type Outcome = { answerBytes: number } | { overflowAt: number } | { engineError: string };

/** A pool whose sessions answer as `outcomes` say, one per session taken, recording what was asked and given back. */
function standInPool(outcomes: Outcome[]) {
  const acquired: { need: SessionNeed; session: ProverSession }[] = [];
  const released: string[] = [];
  const freed: string[] = [];
  let opened = 0;
  const sessions: SessionSource = {
    classes: CLASSES,
    defaultClass: MIDDLE,
    limits: LARGE,
    async acquire(_serverName, need) {
      const outcome = outcomes.shift();
      if (!outcome) throw new Error("the pool was asked for more sessions than the test planned");
      const id = `session-${acquired.length + 1}`;
      const session: ProverSession = { notarySessionId: id, serverName: TARGET.serverName, sizes: need.setup, closed: false, engine: standInEngine(id, need.setup, outcome, freed) };
      acquired.push({ need, session });
      return session;
    },
  } as SessionSource;
  const bridge = {
    openTcp: () => {
      opened += 1;
      // A target that took the connection and answered part of the exchange.
      return { url: `ws://tcp/${opened}`, state: { connected: true, bytesFromTarget: 300 }, responseTimeoutMs: 1_000, close() {} } as unknown as TcpHandle;
    },
  } as unknown as LoopbackBridge;
  const gate = createTurnGate(1);
  const endpointSizes = new EndpointSizes(16);
  const deps = {
    sessions,
    bridge,
    mpcNotary: { release: async (id: string) => void released.push(id) },
    endpointSizes,
    exchanges: gate,
    connectTimeoutMs: 1_000,
    responseTimeoutMs: 1_000,
  };
  return { deps, acquired, released, freed, gate, endpointSizes, tcpOpened: () => opened };
}

function standInEngine(id: string, sizes: SessionSizes, outcome: Outcome, freed: string[]): EngineProver {
  return {
    setup: async () => {},
    async sendRequest(): Promise<EngineExchange> {
      if ("engineError" in outcome) throw new Error(outcome.engineError);
      if ("overflowAt" in outcome) {
        const current = sizes.maxRecvData - 100;
        // The engine's own words (tlsn-wasm alpha.12).
        throw new Error(`attempted to receive more data than was configured, increase \`max_recv\` in the config: current=${current}, additional=${outcome.overflowAt - current}, max=${sizes.maxRecvData}`);
      }
      return { sent: new Uint8Array(200), recv: new Uint8Array(outcome.answerBytes), response: { status: 200, headers: [] } };
    },
    reveal: async () => {},
    free: () => void freed.push(id),
    abandon: () => void freed.push(id),
  };
}

const need = (sizes: SessionSizes): SessionNeed => ({ class: sizes, fits: sizes, setup: sizes, reason: "default" });
const sizing = (canRepeat: boolean): Sizing => ({ need: need(SMALL), endpoint: ENDPOINT, canRepeat });
const log = createLogger({ level: "error" });

async function exchange(pool: ReturnType<typeof standInPool>, canRepeat: boolean) {
  const run = startControl(10_000, new AbortController().signal);
  const holder: ExchangeHolder = {};
  try {
    return { result: await runSizedExchange(pool.deps, run, holder, TARGET, REQUEST, sizing(canRepeat), log), holder };
  } finally {
    run.stop();
  }
}

async function refusal(pool: ReturnType<typeof standInPool>, canRepeat: boolean): Promise<AppError> {
  try {
    await exchange(pool, canRepeat);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected the exchange to fail");
}

/** Whether the turn gate is free again: a caller gets in at once. */
async function gateIsFree(gate: ReturnType<typeof createTurnGate>): Promise<boolean> {
  const entered = await Promise.race([gate.enter().then((leave) => (leave(), true)), Bun.sleep(50).then(() => false)]);
  return entered;
}

describe("an exchange in a session of its size", () => {
  test("an answer that fits: the session it asked for carries it, its size is learned, and its turn is given back", async () => {
    const pool = standInPool([{ answerBytes: 1500 }]);
    const { result, holder } = await exchange(pool, true);
    expect(pool.acquired.map(({ need }) => need.setup)).toEqual([SMALL]);
    expect(result.sizes).toEqual(SMALL);
    expect(result.repeatedIn).toBeUndefined();
    expect(result.exchange.recv.length).toBe(1500);
    expect(pool.endpointSizes.expected(ENDPOINT)).toBe(1500);
    // The run holds its session and connection until the lifecycle is done with them.
    expect(holder.session).toBe(result.session);
    expect(holder.tcp).toBeDefined();
    expect(pool.released).toEqual([]);
    expect(await gateIsFree(pool.gate)).toBe(true);
  });

  test("a GET whose answer overflowed: its size is learned, its session discarded, and it is fetched once more in the class that fits", async () => {
    const pool = standInPool([{ overflowAt: 5000 }, { answerBytes: 5200 }]);
    const { result, holder } = await exchange(pool, true);
    expect(pool.acquired.map(({ need }) => need.setup)).toEqual([SMALL, MIDDLE]);
    expect(pool.acquired[1]!.need).toMatchObject({ class: MIDDLE, fits: MIDDLE, reason: "learned" });
    expect(result).toMatchObject({ sizes: MIDDLE, repeatedIn: MIDDLE });
    // The first session went back to its notary and its engine memory was freed; the second is the run's.
    expect(pool.released).toEqual(["session-1"]);
    expect(pool.freed).toEqual(["session-1"]);
    expect(pool.acquired[0]!.session.closed).toBe(true);
    expect(holder.session).toBe(pool.acquired[1]!.session);
    expect(pool.tcpOpened()).toBe(2);
    expect(pool.endpointSizes.expected(ENDPOINT)).toBe(5200);
    expect(await gateIsFree(pool.gate)).toBe(true);
  });

  test("an overflow past a TLS record's size is repeated in the largest class", async () => {
    const pool = standInPool([{ overflowAt: 20_000 }, { answerBytes: 12_000 }]);
    const { result } = await exchange(pool, true);
    expect(result.repeatedIn).toEqual(LARGE);
  });

  test("a request that may not be repeated (a POST): the overflow is its error, its size learned all the same", async () => {
    const pool = standInPool([{ overflowAt: 5000 }]);
    const error = await refusal(pool, false);
    expect(error.code).toBe("response_too_large");
    expect(pool.acquired).toHaveLength(1);
    expect(pool.endpointSizes.expected(ENDPOINT)).toBe(5000);
    expect(await gateIsFree(pool.gate)).toBe(true);
  });

  test("a GET repeated once only: a second overflow is the error", async () => {
    const pool = standInPool([{ overflowAt: 3000 }, { overflowAt: 9000 }]);
    const error = await refusal(pool, true);
    expect(error.code).toBe("response_too_large");
    expect(pool.acquired.map(({ need }) => need.setup)).toEqual([SMALL, MIDDLE]);
    expect(pool.endpointSizes.expected(ENDPOINT)).toBe(9000);
  });

  test("any other failure is not repeated, and nothing is learned", async () => {
    const pool = standInPool([{ engineError: "io error: connection reset by peer" }]);
    const error = await refusal(pool, true);
    expect(error.code).toBe("target_request_failed");
    expect(pool.acquired).toHaveLength(1);
    expect(pool.endpointSizes.expected(ENDPOINT)).toBeUndefined();
    expect(await gateIsFree(pool.gate)).toBe(true);
  });
});
