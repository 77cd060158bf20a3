import { describe, expect, test } from "bun:test";
import { createTurnGate } from "../../../../src/prover/mpc/pool/turn-gate.ts";
import { hasSettled } from "../../../../testkit/wait.ts";

describe("turn gate", () => {
  test("admits up to its limit at once, then the others in arrival order as callers leave", async () => {
    const gate = createTurnGate(2);
    const a = await gate.enter();
    const b = await gate.enter();
    const c = gate.enter();
    const d = gate.enter();
    expect(await hasSettled(c)).toBe(false);
    expect(gate.status()).toEqual({ running: 2, waiting: 2 });

    b();
    expect(await hasSettled(c)).toBe(true);
    expect(await hasSettled(d)).toBe(false);
    // Leaving twice frees one place only.
    b();
    expect(await hasSettled(d)).toBe(false);
    a();
    expect(await hasSettled(d)).toBe(true);
    (await c)();
    (await d)();
    expect(gate.status()).toEqual({ running: 0, waiting: 0 });
  });

  test("work held from outside counts at once, over the limit if need be; callers after it wait until running is under the limit", async () => {
    const gate = createTurnGate(1);
    const first = await gate.enter();
    const held = gate.hold();
    expect(gate.status()).toEqual({ running: 2, waiting: 0 });
    const next = gate.enter();
    first();
    expect(await hasSettled(next)).toBe(false);
    held();
    held(); // twice: one place only
    expect(await hasSettled(next)).toBe(true);
    (await next)();
    expect(gate.status()).toEqual({ running: 0, waiting: 0 });
  });

  test("a newcomer does not pass callers already waiting", async () => {
    const gate = createTurnGate(1);
    const first = await gate.enter();
    const order: string[] = [];
    const waiting = gate.enter().then((leave) => (order.push("waiting"), leave));
    first();
    const late = gate.enter().then((leave) => (order.push("late"), leave));
    (await waiting)();
    (await late)();
    expect(order).toEqual(["waiting", "late"]);
  });

  test("an aborted caller leaves the queue with the signal's reason; one aborted before it came is refused at once", async () => {
    const gate = createTurnGate(1);
    const first = await gate.enter();
    const abort = new AbortController();
    const quitting = gate.enter(abort.signal);
    const next = gate.enter();
    abort.abort(new Error("deadline passed"));
    await expect(quitting).rejects.toThrow("deadline passed");
    expect(gate.status().waiting).toBe(1);
    first();
    (await next)();

    const gone = new AbortController();
    gone.abort(new Error("already gone"));
    await expect(gate.enter(gone.signal)).rejects.toThrow("already gone");
    expect(gate.status()).toEqual({ running: 0, waiting: 0 });
  });
});
