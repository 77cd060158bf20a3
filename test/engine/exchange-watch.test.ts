import { expect, test } from "bun:test";
import type { SessionCheck } from "../../src/core/session-traffic.ts";
import { AnswerTooLarge, ExchangeGivenUp, watchExchange } from "../../src/engine/exchange-watch.ts";

/**
 * An MPC exchange without progress (no byte on its MPC socket nor from its target) is given up: after the silence
 * limit, or sooner once its target has closed; one whose sockets move is waited for, however long.
 */

const STALL = 30_000;
const AFTER_CLOSE = 10_000;

interface Scenario {
  closed: boolean;
  /** Which side moves at each check, if any. */
  moving?: "mpc" | "target";
  /** The notary counts its socket's bytes (default true). */
  counted?: boolean;
  /** The work settles at this check (never when undefined). */
  settleAfterChecks?: number;
  /** Application data the target sends at each check (default none). */
  plaintextPerCheck?: number;
}

const LIMIT = 16_384;

/** Runs a watch over a scenario; the clock moves 3 s a check. */
async function watched(scenario: Scenario) {
  let clock = 0;
  let checks = 0;
  let mpcBytes = 1_000;
  let targetBytes = 500;
  let plaintext = 0;
  let finish!: (value: string) => void;
  const work = new Promise<string>((resolve) => (finish = resolve));
  const check = async (): Promise<SessionCheck> => {
    checks += 1;
    clock += 3_000;
    if (scenario.moving === "mpc") mpcBytes += 10;
    if (scenario.moving === "target") targetBytes += 10;
    plaintext += scenario.plaintextPerCheck ?? 0;
    if (checks === scenario.settleAfterChecks) finish("answered");
    return scenario.counted === false ? { state: "running" } : { state: "running", traffic: { fromProverBytes: mpcBytes, toProverBytes: 5, quietMs: 0 } };
  };
  const outcome = await watchExchange(work, {
    check,
    target: () => ({ bytes: targetBytes, plaintextBytes: plaintext, closed: scenario.closed }),
    plaintextLimit: LIMIT,
    checkMs: 2,
    stallMs: STALL,
    quietAfterCloseMs: AFTER_CLOSE,
    now: () => clock,
  }).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { outcome, checks };
}

test("the target closed and no progress for 10 s: given up, saying the answer ends with its connection, naming proxy mode", async () => {
  const { outcome, checks } = await watched({ closed: true });
  const error = (outcome as { error: ExchangeGivenUp }).error;
  expect(error).toBeInstanceOf(ExchangeGivenUp);
  // The first check sets the baseline; quiet is counted from it.
  expect(checks).toBe(1 + Math.ceil(AFTER_CLOSE / 3_000));
  expect(error.appError().code).toBe("target_request_failed");
  expect(error.appError().message).toContain("an answer that ends with its connection");
  expect(error.appError().message).toContain("proxy mode (T-PROOF-MODE: proxy)");
});

test("the target open and no progress for the silence limit: given up as a stall, naming proxy mode", async () => {
  const { outcome, checks } = await watched({ closed: false });
  const error = (outcome as { error: ExchangeGivenUp }).error;
  expect(error).toBeInstanceOf(ExchangeGivenUp);
  expect(checks).toBe(1 + Math.ceil(STALL / 3_000));
  expect(error.appError().message).toStartWith("the MPC exchange made no progress for 30 s");
});

test("bytes moving on the MPC socket or from the target are progress; a notary that counts nothing gives no measure: each waits", async () => {
  for (const scenario of [{ closed: true, moving: "mpc" }, { closed: false, moving: "target" }, { closed: true, counted: false }] as const) {
    const { outcome, checks } = await watched({ ...scenario, settleAfterChecks: 25 });
    expect(outcome).toEqual({ value: "answered" });
    expect(checks).toBeGreaterThanOrEqual(25);
  }
});

test("an answer beyond what the session can receive is given up as soon as its records say so, not once all of it came", async () => {
  // 5,000 bytes of application data a check, the target still sending: over 16,384 at the fourth check.
  const { outcome, checks } = await watched({ closed: false, moving: "target", plaintextPerCheck: 5_000 });
  const error = (outcome as { error: AnswerTooLarge }).error;
  expect(error).toBeInstanceOf(AnswerTooLarge);
  expect(error.plaintextBytes).toBe(20_000);
  expect(checks).toBe(4);
  // At the limit exactly, the exchange goes on.
  const atLimit = await watched({ closed: false, moving: "target", plaintextPerCheck: LIMIT, settleAfterChecks: 1 });
  expect(atLimit.outcome).toEqual({ value: "answered" });
});
