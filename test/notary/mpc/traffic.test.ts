/**
 * An MPC session's socket traffic dates its exchange: the socket's activity starts when it attaches, and again after
 * its longest quiet spell (a warm session's wait between setup and request). Its clock is a hand-moved one.
 */
import { expect, test } from "bun:test";
import { QUIET_SPELL_MS, type TrafficClock, countTraffic, newTrafficCounter, trafficFields, trafficNow } from "../../../src/notary/mpc/traffic.ts";

/** A clock that moves only when told; its wall clock starts at a fixed date, 1000 s ahead of its monotonic one. */
function handClock() {
  let monotonic = 5_000;
  const clock: TrafficClock = { monotonicMs: () => monotonic, wallMs: () => 1_700_000_000_000 + monotonic };
  return { clock, pass: (ms: number) => void (monotonic += ms), wallNow: () => clock.wallMs() };
}

test("activity restarts after the longest quiet spell; shorter pauses, before or after, leave it", () => {
  const { clock, pass, wallNow } = handClock();
  const counter = newTrafficCounter(clock);
  const attachedAt = counter.activeSince;
  expect(attachedAt).toBe(wallNow());
  countTraffic(counter, "fromProver", 100);
  countTraffic(counter, "toProver", 100);
  expect(counter.activeSince).toBe(attachedAt);
  // A pause shorter than a spell does not count, however long the session has been quiet before.
  pass(QUIET_SPELL_MS - 1);
  countTraffic(counter, "fromProver", 10);
  expect(counter.activeSince).toBe(attachedAt);
  // A short spell while computing, then the warm wait: longer, it dates the request.
  pass(QUIET_SPELL_MS + 100);
  countTraffic(counter, "fromProver", 10);
  const afterComputing = counter.activeSince;
  expect(afterComputing).toBe(wallNow());
  pass(QUIET_SPELL_MS + 1000);
  countTraffic(counter, "fromProver", 10);
  expect(counter.activeSince).toBe(wallNow());
  const requestAt = counter.activeSince;
  // A spell as long as a spell counts only when it is the longest: a shorter one inside the exchange does not move it.
  pass(QUIET_SPELL_MS + 100);
  countTraffic(counter, "toProver", 10);
  expect(counter.activeSince).toBe(requestAt);
  // Bytes each way, and the longest quiet spell in the log fields.
  pass(250);
  expect(trafficNow(counter)).toEqual({ fromProverBytes: 130, toProverBytes: 110, quietMs: 250 });
  expect(trafficFields(counter)).toEqual({ fromProverBytes: 130, toProverBytes: 110, quietMs: 250, longestQuietMs: QUIET_SPELL_MS + 1000 });
});

test("a quiet spell exactly as long as QUIET_SPELL_MS counts; the session's own clock dates it", () => {
  const { clock, pass, wallNow } = handClock();
  const counter = newTrafficCounter(clock);
  pass(QUIET_SPELL_MS);
  countTraffic(counter, "toProver", 1);
  expect(counter.activeSince).toBe(wallNow());
  // The quiet time so far outlasts the longest spell in the log fields.
  pass(QUIET_SPELL_MS * 3);
  expect(trafficFields(counter).longestQuietMs).toBe(QUIET_SPELL_MS * 3);
});
