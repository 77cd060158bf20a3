/**
 * A proxy session's idle watch, on a clock the test moves: the session ends exactly the idle timeout after the last
 * byte, however the bytes fell against the watch's timer; never before, never later.
 */
import { expect, test } from "bun:test";
import { type WatchClock, idleWatch, systemWatchClock } from "../../../src/notary/proxy-mode/idle-watch.ts";
import { afterTimersDue } from "../../../testkit/wait.ts";

/** A clock that runs its timers only as the test moves it on, each at the time it is due. */
function steppedClock(): WatchClock & { pass(ms: number): void; now(): number } {
  let now = 5_000;
  let timers: { at: number; due: () => void }[] = [];
  return {
    monotonicMs: () => now,
    now: () => now,
    after(ms, due) {
      const timer = { at: now + ms, due };
      timers.push(timer);
      return () => (timers = timers.filter((other) => other !== timer));
    },
    pass(ms) {
      const end = now + ms;
      for (let next = firstDue(end); next; next = firstDue(end)) {
        timers = timers.filter((other) => other !== next);
        now = next.at;
        next.due();
      }
      now = end;
    },
  };
  function firstDue(end: number) {
    return timers.filter((timer) => timer.at <= end).sort((a, b) => a.at - b.at)[0];
  }
}

const LIMIT = 100;

/** A watch of LIMIT on a stepped clock, and the times it expired at. */
function watched() {
  const clock = steppedClock();
  const expiredAt: number[] = [];
  const watch = idleWatch(LIMIT, () => expiredAt.push(clock.now()), clock);
  return { clock, watch, expiredAt, start: clock.now() };
}

test("no byte at all: it expires at the idle timeout from its start, not a millisecond before", () => {
  const { clock, expiredAt, start } = watched();
  clock.pass(LIMIT - 1);
  expect(expiredAt).toEqual([]);
  clock.pass(1);
  expect(expiredAt).toEqual([start + LIMIT]);
  clock.pass(10 * LIMIT);
  expect(expiredAt).toEqual([start + LIMIT]);
});

test("a byte before the timer is due: it expires the idle timeout after that byte, not later", () => {
  const { clock, watch, expiredAt, start } = watched();
  clock.pass(40);
  watch.touch();
  // The first timer finds 60 ms of quiet and waits for the other 40.
  clock.pass(LIMIT - 1);
  expect(expiredAt).toEqual([]);
  clock.pass(1);
  expect(expiredAt).toEqual([start + 40 + LIMIT]);
});

test("bytes on either side of a re-armed timer: each moves the end to the idle timeout after it", () => {
  const { clock, watch, expiredAt, start } = watched();
  for (const at of [30, 90, 150, 220]) {
    clock.pass(at - (clock.now() - start));
    watch.touch();
  }
  clock.pass(LIMIT - 1);
  expect(expiredAt).toEqual([]);
  clock.pass(1);
  expect(expiredAt).toEqual([start + 220 + LIMIT]);
});

test("a stopped watch never expires", () => {
  const { clock, watch, expiredAt } = watched();
  clock.pass(40);
  watch.touch();
  // Re-armed by now, due in a millisecond: stopping cancels that timer, not only the first.
  clock.pass(LIMIT - 1);
  watch.stop();
  clock.pass(10 * LIMIT);
  expect(expiredAt).toEqual([]);
});

test("the system clock's timers: one runs once due, one cancelled never does", async () => {
  const ran: string[] = [];
  systemWatchClock.after(5, () => ran.push("kept"));
  const cancel = systemWatchClock.after(5, () => ran.push("cancelled"));
  cancel();
  await afterTimersDue(5);
  expect(ran).toEqual(["kept"]);
});
