/**
 * MPC's sized exchange over a pool of stand-in sessions (no engine): which session it takes, what it learns of the
 * endpoint's answer, when an answer that overflowed its session is fetched once more in a bigger class, and that
 * everything it took is given back. The engine's real overflow is test/prover/mpc/pool/pool-sized.e2e.test.ts's.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import type { ExchangeRequest } from "../../../src/core/exchange.ts";
import { createLogger } from "../../../src/base/log.ts";
import { type ExchangeHolder, type Sizing, runSizedExchange } from "../../../src/prover/mpc/sized-exchange.ts";
import { startControl } from "../../../src/prover/proving/run-control.ts";
import { LARGE, MIDDLE, SMALL, TARGET, gateIsFree, needOf, standInPool } from "../../../testkit/stand-in-pool.ts";

const REQUEST: ExchangeRequest = { method: "GET", pathAndQuery: "/data", headers: [["host", "api.example"]], body: undefined };
const ENDPOINT = "GET api.example:443/data";

const sizing = (canRepeat: boolean): Sizing => ({ need: needOf(SMALL), endpoint: ENDPOINT, canRepeat });
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
