/**
 * An MPC session's socket traffic dates its exchange: the socket's activity starts when it attaches, and again,
 * once only, after its first quiet spell (a warm session's wait between setup and request).
 */
import { expect, test } from "bun:test";
import { QUIET_SPELL_MS, countTraffic, newTrafficCounter } from "../../src/notary/traffic.ts";

test("activity restarts after the first quiet spell only; shorter pauses and later spells leave it", async () => {
  const counter = newTrafficCounter();
  const attachedAt = counter.activeSince;
  countTraffic(counter, "fromProver", 100);
  countTraffic(counter, "toProver", 100);
  expect(counter.activeSince).toBe(attachedAt);
  // The warm wait: the socket carries nothing for longer than a quiet spell.
  await Bun.sleep(QUIET_SPELL_MS + 100);
  const beforeRequest = Date.now();
  countTraffic(counter, "fromProver", 10);
  expect(counter.activeSince).toBeGreaterThanOrEqual(beforeRequest);
  const requestAt = counter.activeSince;
  // A later spell (inside or after the exchange) does not move it later.
  await Bun.sleep(QUIET_SPELL_MS + 100);
  countTraffic(counter, "toProver", 10);
  expect(counter.activeSince).toBe(requestAt);
}, 15_000);
