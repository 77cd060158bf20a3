import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/base/log.ts";
import type { NotaryClient } from "../../../src/prover/notary/client.ts";
import { NotaryPool } from "../../../src/prover/notary/notary-pool.ts";
import type { NotaryInfo } from "../../../src/protocol/notary.ts";
import { afterPendingWork } from "../../../testkit/wait.ts";

/** One notary whose /info answers the test gives by hand, in order. */
function handAnsweredNotary() {
  const answers: { resolve: (info: NotaryInfo) => void; reject: (error: Error) => void }[] = [];
  const client = {
    info: () => new Promise<NotaryInfo>((resolve, reject) => answers.push({ resolve, reject })),
    createSession: async () => "s1",
  } as unknown as NotaryClient;
  // Checks far apart: the test's own calls are the only ones after the first.
  const pool = new NotaryPool([client], { checkEveryMs: 600_000, backoff: { firstMs: 600_000, maxMs: 600_000 }, log: createLogger({ level: "error" }) });
  return { pool, answers };
}

const stalled = () => new Error("the notary cannot be reached");

test("checks that were in flight together and fail together count as one failure; a later one counts again", async () => {
  const { pool, answers } = handAnsweredNotary();
  answers[0]!.resolve({} as NotaryInfo); // the pool's first check
  const sessionId = await pool.createSession("mpc", { maxSentData: 512, maxRecvData: 1024 });
  let gaveUp = false;
  pool.whileReachable(sessionId, new Promise<never>(() => {})).catch(() => (gaveUp = true));

  // Three running sessions' checks in flight when the notary stalls: all three time out.
  const checks = [pool.reachable(sessionId), pool.reachable(sessionId), pool.reachable(sessionId)];
  for (const check of checks) check.catch(() => {});
  await Bun.sleep(2); // the failure is counted after the checks started
  for (const answer of answers.slice(1)) answer.reject(stalled());
  await afterPendingWork();
  expect(pool.statuses()[0]!.healthy).toBe(false);
  expect(gaveUp).toBe(false);

  // A check started after that failure fails too: two failures in a row, and waiting work gives up.
  await Bun.sleep(2);
  const next = pool.reachable(sessionId);
  next.catch(() => {});
  answers.at(-1)!.reject(stalled());
  await afterPendingWork();
  expect(gaveUp).toBe(true);
  pool.stop();
});

test("answersNow asks a healthy notary afresh: one that just died is found so at once and marked down", async () => {
  const { pool, answers } = handAnsweredNotary();
  answers[0]!.resolve({} as NotaryInfo); // the pool's first check: healthy
  await afterPendingWork();
  const alive = pool.answersNow();
  await afterPendingWork();
  answers[1]!.resolve({} as NotaryInfo);
  expect(await alive).toBe(true);
  // The health checks still say up; the fresh question meets the dead notary.
  expect(pool.statuses()[0]!.healthy).toBe(true);
  const dead = pool.answersNow();
  await afterPendingWork();
  answers[2]!.reject(stalled());
  expect(await dead).toBe(false);
  expect(pool.statuses()[0]!.healthy).toBe(false);
  expect(await pool.answersNow()).toBe(false);
});

/** A notary that answers /info at once, offering both built-in modes, and opens sessions as `open` says. */
function notaryOpening(open: (mode: string) => Promise<string>): NotaryClient {
  return {
    info: async () => ({ proxyMode: true, modes: ["mpc", "proxy"] }) as NotaryInfo,
    createSession: (mode: string) => open(mode),
  } as unknown as NotaryClient;
}

describe("a notary this prover does not trust", () => {
  test.each(["mpc", "proxy"])("is left out in %s mode like an unreachable one: the next notary opens the session", async (mode) => {
    const untrusted = notaryOpening(() => Promise.reject(new AppError("notary_untrusted", "the notary is not trusted: its key changed")));
    const trusted = notaryOpening(async (asked) => `session-of-${asked}`);
    const pool = new NotaryPool([untrusted, trusted], { checkEveryMs: 600_000, backoff: { firstMs: 600_000, maxMs: 600_000 }, log: createLogger({ level: "error" }) });
    try {
      // Every candidate order is tried: the pool starts at a random notary.
      for (let i = 0; i < 4; i++) expect(await pool.createSession(mode, {})).toBe(`1~session-of-${mode}`);
      expect(pool.statuses()[0]!.healthy).toBe(false);
    } finally {
      pool.stop();
    }
  });
});
