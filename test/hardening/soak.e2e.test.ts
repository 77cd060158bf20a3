import { expect, test } from "bun:test";
import { SLOW_BODY_CLIENTS } from "../../scripts/soak/abuse.ts";
import { SOAK_LIMITS } from "../../scripts/soak/servers.ts";
import { SOAK_BOUNDS, runSoak } from "../../scripts/soak.ts";

/**
 * The soak of `npm run soak` (scripts/soak.ts) with 45 s of abuse against a real `cli prover start` and a real
 * `cli notary start` (auth on): every limit is reached and refuses what is beyond it, the servers give back their
 * sockets and the notary its sessions once the abuse stops, and a real proof still verifies afterwards.
 */
test("after bounded abuse the prover and notary are back to baseline and still prove", async () => {
  const report = await runSoak(45);
  const { counts, baseline, end } = report;
  // Every stated bound first, so that a failure names its figure and value.
  expect(report.bounds.filter((b) => !b.ok).map((b) => `${b.figure}: ${b.value} (bound ${b.bound})`)).toEqual([]);
  expect(counts.subscribersRefused503).toBeGreaterThan(0);
  expect(counts.subscribersOpened).toBeGreaterThanOrEqual(SOAK_LIMITS.sseTotal);
  expect(counts.subscribersHeldPeak).toBe(SOAK_LIMITS.sseTotal);
  expect(counts.slowBodiesClosedByServer).toBeGreaterThanOrEqual(SLOW_BODY_CLIENTS);
  expect(counts.sessionsUnauthenticated401).toBeGreaterThan(0);
  expect(counts.sessionsUnauthenticatedOther).toBe(0);
  expect(counts.sessionsCreated).toBeGreaterThan(0);
  expect(counts.sessionsRefused503).toBeGreaterThan(0);
  expect(Math.max(...report.samples.map((s) => s.notarySessions))).toBeLessThanOrEqual(SOAK_LIMITS.notaryConcurrency);
  expect(report.sessionsAfterAbuse).toBe(0);
  expect(counts.storeStreamsOpened).toBeGreaterThanOrEqual(SOAK_LIMITS.storeStreams);
  expect(counts.storeStreamsRefused503).toBeGreaterThan(0);
  expect(counts.storeStreamsDroppedIdle).toBeGreaterThan(0);
  expect(end.proverFds).toBeLessThanOrEqual(baseline.proverFds + SOAK_BOUNDS.fdSlack);
  expect(end.notaryFds).toBeLessThanOrEqual(baseline.notaryFds + SOAK_BOUNDS.fdSlack);
  expect(Math.max(...report.samples.map((s) => s.proverRss), end.proverRss)).toBeLessThanOrEqual(SOAK_BOUNDS.proverRss);
  expect(Math.max(...report.samples.map((s) => s.notaryRss), end.notaryRss)).toBeLessThanOrEqual(SOAK_BOUNDS.notaryRss);
  expect(report.proof.detail).toBe("cli verify: valid");
  expect(report.ok).toBe(true);
}, 400_000);
