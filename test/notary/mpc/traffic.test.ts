/**
 * An MPC session's socket traffic dates its exchange: the socket's activity starts when it attaches, and again after
 * its longest quiet spell (a warm session's wait between setup and request).
 */
import { expect, test } from "bun:test";
import { QUIET_SPELL_MS, countTraffic, newTrafficCounter } from "../../../src/notary/mpc/traffic.ts";

test("activity restarts after the longest quiet spell; shorter pauses, before or after, leave it", async () => {
  const counter = newTrafficCounter();
  const attachedAt = counter.activeSince;
  countTraffic(counter, "fromProver", 100);
  countTraffic(counter, "toProver", 100);
  expect(counter.activeSince).toBe(attachedAt);
  // A short spell while computing, then the warm wait: longer, it dates the request.
  await Bun.sleep(QUIET_SPELL_MS + 100);
  countTraffic(counter, "fromProver", 10);
  const afterComputing = counter.activeSince;
  expect(afterComputing).toBeGreaterThan(attachedAt);
  await Bun.sleep(QUIET_SPELL_MS + 1000);
  const beforeRequest = Date.now();
  countTraffic(counter, "fromProver", 10);
  expect(counter.activeSince).toBeGreaterThanOrEqual(beforeRequest);
  const requestAt = counter.activeSince;
  // A shorter spell inside the exchange does not move it.
  await Bun.sleep(QUIET_SPELL_MS + 100);
  countTraffic(counter, "toProver", 10);
  expect(counter.activeSince).toBe(requestAt);
}, 20_000);
