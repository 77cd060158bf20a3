/**
 * One MPC call's run over a pool of stand-in sessions (no engine): the slot it holds, the exchange in its session,
 * the reveal of all but the hidden ranges, what an abandonment cuts, the notary watch, and the refusals that come
 * before any session is taken. The real engine's runs are the e2e files'.
 */
import { describe, expect, jest, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import type { TargetPolicy } from "../../../src/core/target-policy.ts";
import { createLogger } from "../../../src/base/log.ts";
import { createSessionSlots } from "../../../src/prover/exchange/capacity.ts";
import { MpcRun, type MpcRunDeps } from "../../../src/prover/mpc/session-run.ts";
import { type RunControl, startControl } from "../../../src/prover/proving/run-control.ts";
import type { RedactionResult } from "../../../src/redaction/index.ts";
import { SMALL, type Outcome, gateIsFree, needOf, standInPool } from "../../../testkit/stand-in-pool.ts";
import { proofCallOf } from "../../../testkit/proof-call.ts";
import { eventually } from "../../../testkit/wait.ts";

const SECRET = "s3cret-token-4b1d";
const log = createLogger({ level: "error" });
const allowAll: TargetPolicy = { allowPrivateTargets: true, resolve: new Map([["api.example:443", "127.0.0.1"]]), allowedHosts: [], allowedPorts: [] };

const call = proofCallOf("https://api.example/data", {}, [["authorization", `Bearer ${SECRET}`]]);

/** A run's parts: the stand-in pool, one MPC slot, a notary that answers as `reachable` says, the engine's suite as `suite` says. */
function setUp(outcomes: Outcome[], options: { policy?: TargetPolicy; reachable?: () => Promise<void>; suite?: () => Promise<void> } = {}) {
  const pool = standInPool(outcomes);
  const slots = createSessionSlots(1);
  const deps: MpcRunDeps = {
    ...pool.deps,
    notary: { reachable: options.reachable ?? (async () => {}) },
    slots,
    policy: options.policy ?? allowAll,
    engineSuite: { check: options.suite ?? (async () => {}) },
  };
  const control = startControl(30_000, new AbortController().signal);
  const run = new MpcRun(deps, control, call, { need: needOf(SMALL), endpoint: "GET api.example:443/data", canRepeat: true });
  return { pool, slots, deps, control, run };
}

async function failureOf(work: Promise<unknown>): Promise<AppError> {
  try {
    await work;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected a failure");
}

/** Ends the run as the lifecycle does once it is over. */
function finish(parts: { run: MpcRun; control: RunControl }) {
  parts.run.end();
  parts.control.stop();
}

describe("an MPC run", () => {
  test("holds one MPC slot from its start to its end: a second run meanwhile is over_capacity", () => {
    const first = setUp([{ answerBytes: 500 }]);
    expect(first.slots.active()).toBe(1);
    const control = startControl(30_000, new AbortController().signal);
    const refused = (() => {
      try {
        new MpcRun(first.deps, control, call, { need: needOf(SMALL), endpoint: "GET api.example:443/data", canRepeat: true });
      } catch (error) {
        return error as AppError;
      }
    })();
    control.stop();
    expect(refused?.code).toBe("over_capacity");
    finish(first);
    expect(first.slots.active()).toBe(0);
  });

  test("exchanges in its session, reveals all but the hidden ranges over it, and frees the session at its end", async () => {
    const parts = setUp([{ answerBytes: 1500 }]);
    const exchanged = await parts.run.exchange(log, Promise.resolve());
    expect(exchanged.notarySessionId).toBe("session-1");
    expect(exchanged.answerHeaders).toEqual([["t-session-class", "1024/2048"]]);
    expect(exchanged.recv.length).toBe(1500);
    const sentText = new TextDecoder().decode(exchanged.sent);
    const secret = { start: sentText.indexOf(SECRET), end: sentText.indexOf(SECRET) + SECRET.length };
    const redaction: RedactionResult = {
      hidden: { sent: [secret], recv: [{ start: 100, end: 200 }] },
      declared: [{ pattern: "req:header:authorization", matched: true, spans: [{ direction: "sent", ...secret }] }],
      unmatched: [],
    };
    const attestation = await parts.run.reveal(redaction);
    expect(parts.pool.revealed).toEqual([
      {
        sent: [{ start: 0, end: secret.start }, { start: secret.end, end: exchanged.sent.length }],
        recv: [{ start: 0, end: 100 }, { start: 200, end: 1500 }],
      },
    ]);
    expect(attestation.redactions).toEqual(redaction.declared);
    // The session stays open until the lifecycle is done (the notary may still be verifying).
    expect(parts.pool.freed).toEqual([]);
    finish(parts);
    expect(parts.pool.freed).toEqual(["session-1"]);
    expect(parts.pool.released).toEqual([]);
    expect(parts.slots.active()).toBe(0);
    expect(await gateIsFree(parts.pool.gate)).toBe(true);
  });

  test("a reveal before any exchange is an internal error, and reveals nothing", async () => {
    const parts = setUp([{ answerBytes: 10 }]);
    const error = await failureOf(parts.run.reveal({ hidden: { sent: [], recv: [] }, declared: [], unmatched: [] }));
    expect(error.code).toBe("internal");
    expect(parts.pool.revealed).toEqual([]);
    finish(parts);
  });

  test("a run that makes no proof gives its session back to the notary", async () => {
    const parts = setUp([{ answerBytes: 10 }]);
    await parts.run.exchange(log, Promise.resolve());
    parts.run.discard();
    finish(parts);
    expect(parts.pool.released).toEqual(["session-1"]);
  });

  test("abandoned mid-exchange: the target connection and the engine's call are cut and the notary's session released, once", async () => {
    const parts = setUp([{ hang: true }]);
    const exchange = parts.run.exchange(log, Promise.resolve());
    // The exchange has its session and connection.
    expect(await eventually(() => parts.pool.tcpOpened(), (opened) => opened === 1, 10_000, { intervalMs: 5 })).toBe(1);
    parts.control.abandon(new AppError("session_timeout", "the session took longer than 30000 ms"));
    expect((await failureOf(exchange)).code).toBe("session_timeout");
    expect(parts.pool.tcpClosed).toEqual(["ws://tcp/1"]);
    expect(parts.pool.abandoned).toEqual(["session-1"]);
    expect(parts.pool.released).toEqual(["session-1"]);
    // The lifecycle then discards and ends it: nothing is released or freed twice.
    parts.run.discard();
    finish(parts);
    expect(parts.pool.released).toEqual(["session-1"]);
    expect(parts.pool.freed).toEqual([]);
    expect(parts.slots.active()).toBe(0);
  });

  test("no session is taken before the request id's claim is durable; a refused claim fails the exchange with its refusal, nothing taken", async () => {
    const parts = setUp([{ answerBytes: 10 }]);
    let claim!: { resolve(): void; reject(error: Error): void };
    const exchange = parts.run.exchange(log, new Promise<void>((resolve, reject) => (claim = { resolve, reject })));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(parts.pool.acquired).toEqual([]);
    claim.reject(new AppError("duplicate_request_id", "T-REQUEST-ID was used before"));
    expect((await failureOf(exchange)).code).toBe("duplicate_request_id");
    expect(parts.pool.acquired).toEqual([]);
    expect(parts.pool.tcpOpened()).toBe(0);
    finish(parts);
  });

  test("a target the policy forbids, or one the engine cannot speak to, is refused before any session is taken", async () => {
    const forbidden = setUp([], { policy: { ...allowAll, allowedHosts: ["other.example"] } });
    expect((await failureOf(forbidden.run.exchange(log, Promise.resolve()))).code).toBe("target_forbidden");
    finish(forbidden);
    const unsupported = setUp([], { suite: async () => Promise.reject(new AppError("tls_unsupported", "the target does not speak the engine's suite; use T-PROOF-MODE: proxy")) });
    expect((await failureOf(unsupported.run.exchange(log, Promise.resolve()))).code).toBe("tls_unsupported");
    finish(unsupported);
    for (const { pool } of [forbidden, unsupported]) expect(pool.acquired).toEqual([]);
  });

  test("a notary that fails two checks in a row abandons the run with notary_unavailable; one answered check starts the count again", async () => {
    // The checks come every 2 s: the clock is the test's, each check's answer settled before the next.
    jest.useFakeTimers();
    try {
      const answers = [false, true, false, false];
      const parts = setUp([{ hang: true }], { reachable: async () => (answers.shift() ? undefined : Promise.reject(new Error("gone"))) });
      const exchange = parts.run.exchange(log, Promise.resolve());
      for (let check = 1; check <= 3; check++) {
        jest.advanceTimersByTime(2_000);
        for (let i = 0; i < 10; i++) await Promise.resolve();
        // fail, pass, fail: not two in a row yet.
        expect(parts.control.failure).toBeUndefined();
      }
      jest.advanceTimersByTime(2_000);
      const error = await failureOf(exchange);
      expect(error.code).toBe("notary_unavailable");
      expect(answers).toEqual([]);
      expect(parts.pool.abandoned).toEqual(["session-1"]);
      finish(parts);
    } finally {
      jest.useRealTimers();
    }
  });
});
