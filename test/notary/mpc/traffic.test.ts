/**
 * An MPC session's socket traffic dates its exchange: the socket's activity starts when it attaches, and again after
 * its longest quiet spell (a warm session's wait between setup and request).
 */
import { expect, test } from "bun:test";
import { QUIET_SPELL_MS, type TrafficClock, countTraffic, newTrafficCounter, trafficFields } from "../../../src/notary/mpc/traffic.ts";

/** A clock the test moves: the wall clock starts at a fixed date, the monotonic one at an unrelated origin. */
function steppedClock(): TrafficClock & { pass(ms: number): void } {
  let monotonic = 5_000;
  let wall = Date.UTC(2026, 0, 1);
  return { monotonicMs: () => monotonic, wallMs: () => wall, pass: (ms) => ((monotonic += ms), (wall += ms)) };
}

test("activity restarts after the longest quiet spell; shorter pauses, before or after, leave it", () => {
  const clock = steppedClock();
  const counter = newTrafficCounter(clock);
  const attachedAt = counter.activeSince;
  expect(attachedAt).toBe(clock.wallMs());
  countTraffic(counter, "fromProver", 100);
  countTraffic(counter, "toProver", 100);
  expect(counter.activeSince).toBe(attachedAt);
  // A pause shorter than a spell does not count as one.
  clock.pass(QUIET_SPELL_MS - 1);
  countTraffic(counter, "fromProver", 10);
  expect(counter.activeSince).toBe(attachedAt);
  // A short spell while computing, then the warm wait: longer, it dates the request.
  clock.pass(QUIET_SPELL_MS + 100);
  countTraffic(counter, "fromProver", 10);
  const afterComputing = clock.wallMs();
  expect(counter.activeSince).toBe(afterComputing);
  clock.pass(QUIET_SPELL_MS + 1000);
  countTraffic(counter, "fromProver", 10);
  const requestAt = clock.wallMs();
  expect(counter.activeSince).toBe(requestAt);
  // A shorter spell inside the exchange does not move it.
  clock.pass(QUIET_SPELL_MS + 100);
  countTraffic(counter, "toProver", 10);
  expect(counter.activeSince).toBe(requestAt);
  clock.pass(250);
  expect(trafficFields(counter)).toEqual({ fromProverBytes: 130, toProverBytes: 110, quietMs: 250, longestQuietMs: QUIET_SPELL_MS + 1000 });
});
