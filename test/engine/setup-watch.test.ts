import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import type { EngineProvers } from "../../src/engine/prover.ts";
import type { EngineSocketStats } from "../../src/engine/socket-stats.ts";
import type { SessionCheck } from "../../src/core/session-traffic.ts";
import { type NotarySessions, SetupFailed, setupProverSession } from "../../src/engine/session.ts";
import { type SetupProgress, judgeSetup, verdictText } from "../../src/engine/setup-watch.ts";
import { afterTimersDue } from "../../testkit/wait.ts";

const traffic = (fromProverBytes: number, toProverBytes: number) => ({ fromProverBytes, toProverBytes, quietMs: 0 });
const LIMIT = 60_000;

describe("what one answer of the notary means for a setup", () => {
  const fresh: SetupProgress = { ran: false, movedAtMs: 0 };

  test("an end counts only after the session ran: before, its socket is not attached yet", () => {
    expect(judgeSetup(fresh, { state: "not_running" }, 10_000, LIMIT).verdict).toEqual({ kind: "wait" });
    const ran = judgeSetup(fresh, { state: "running" }, 10_000, LIMIT).progress;
    expect(ran.ran).toBe(true);
    expect(judgeSetup(ran, { state: "not_running" }, 12_000, LIMIT).verdict).toEqual({ kind: "ended" });
    // No answer says nothing.
    expect(judgeSetup(ran, { state: "unknown" }, 12_000, LIMIT)).toEqual({ progress: ran, verdict: { kind: "wait" } });
  });

  test("bytes moving either way are progress; none either way for the limit is a stall", () => {
    let { progress } = judgeSetup(fresh, { state: "running", traffic: traffic(100, 0) }, 1_000, LIMIT);
    expect(progress).toEqual({ ran: true, bytes: 100, movedAtMs: 1_000 });
    // Only the notary's side moved: still progress.
    ({ progress } = judgeSetup(progress, { state: "running", traffic: traffic(100, 50) }, 30_000, LIMIT));
    expect(progress.movedAtMs).toBe(30_000);
    expect(judgeSetup(progress, { state: "running", traffic: traffic(100, 50) }, 30_000 + LIMIT - 1, LIMIT).verdict).toEqual({ kind: "wait" });
    const stalled = judgeSetup(progress, { state: "running", traffic: traffic(100, 50) }, 30_000 + LIMIT, LIMIT).verdict;
    expect(stalled).toEqual({ kind: "stalled", quietMs: LIMIT, traffic: traffic(100, 50) });
    expect(verdictText(stalled as Extract<typeof stalled, { kind: "stalled" }>)).toBe(
      "the setup made no progress for 60 s: its MPC socket carried nothing either way (100 bytes from the prover and 50 to it so far)",
    );
  });

  test("a notary that does not count traffic never calls a setup stalled", () => {
    const ran = judgeSetup(fresh, { state: "running" }, 0, LIMIT).progress;
    expect(judgeSetup(ran, { state: "running" }, 10 * LIMIT, LIMIT).verdict).toEqual({ kind: "wait" });
  });
});

/**
 * An engine whose setup never settles, as tlsn-wasm's after its notary socket drops or when it stalls; with
 * `sockets`, it says what its MPC socket carried.
 */
function stuckEngine(abandoned: string[], sockets?: EngineSocketStats[], runningMs?: () => number): EngineProvers {
  return {
    create: () => ({
      runningMs,
      setup: () => new Promise<void>(() => {}),
      sendRequest: () => Promise.reject(new Error("unused")),
      reveal: () => Promise.reject(new Error("unused")),
      free() {},
      abandon: () => void abandoned.push("setup"),
      notarySocketStats: sockets && (async () => sockets),
    }),
  };
}

function answeringNotary(answers: SessionCheck[], released: string[]): NotarySessions & { asked(): number } {
  let asked = 0;
  return {
    createSession: async () => "n1",
    notarizeUrl: (id) => `ws://127.0.0.1:1/notarize?sessionId=${id}`,
    release: async (id) => void released.push(id),
    sessionState: async () => answers[Math.min(asked++, answers.length - 1)]!,
    asked: () => asked,
  };
}

const SIZES = { maxSentData: 512, maxRecvData: 1024 };
/** How often the setup's watch asks the notary here (a prover asks every 2 s). */
const CHECK_MS = 25;

/**
 * The setup's watch asks the notary every `checkMs`. A session the notary ended, or one whose socket carried
 * nothing either way for the stall limit, fails the setup as SetupFailed (the pool may set up once more): the
 * engine's call is abandoned, the notary's session released, and the notary asked no more.
 */
describe("a setup the engine never settles", () => {
  test("whose session the notary ended fails as SetupFailed instead of waiting for good", async () => {
    const abandoned: string[] = [];
    const released: string[] = [];
    // Waiting first (its socket not attached yet), then running, then ended.
    const notary = answeringNotary([{ state: "not_running" }, { state: "running" }, { state: "not_running" }], released);
    const started = performance.now();
    const failure = await setupProverSession(notary, stuckEngine(abandoned), "a.test", SIZES, { checkMs: CHECK_MS }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SetupFailed);
    expect(failure).toMatchObject({ code: "notary_unavailable", message: "MPC setup with the notary failed: the notary ended the session during its setup (its MPC socket closed)" });
    expect(notary.asked()).toBe(3);
    // Asked once per interval, not in a loop.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * CHECK_MS - 10);
    expect(abandoned).toEqual(["setup"]);
    expect(released).toEqual(["n1"]);
    // The engine's call never settles; the notary is not asked again (a watch still asking would have by then).
    await afterTimersDue(2 * CHECK_MS);
    expect(notary.asked()).toBe(3);
  });

  test("whose socket went quiet both ways fails as SetupFailed once the stall limit passed", async () => {
    const abandoned: string[] = [];
    const released: string[] = [];
    // Bytes move at the first two checks, then stop.
    const notary = answeringNotary(
      [{ state: "running", traffic: traffic(10, 0) }, { state: "running", traffic: traffic(10, 20) }, { state: "running", traffic: traffic(10, 20) }],
      released,
    );
    // The engine handed its socket more than reached the notary, 6 bytes of it still in its process.
    const sockets = [{ target: "/notarize?sessionId=n1", readyState: 1, sentBytes: 16, receivedBytes: 20, bufferedBytes: 6 }];
    // The engine's clock is the checks made, 2 s of running time each: the verdict does not depend on how late a
    // loaded machine runs timers.
    const clock = () => notary.asked() * 2_000;
    const failure = await setupProverSession(notary, stuckEngine(abandoned, sockets, clock), "a.test", SIZES, { stallMs: 3_000, checkMs: CHECK_MS }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SetupFailed);
    expect((failure as Error).message).toMatch(
      /^MPC setup with the notary failed: the setup made no progress for \d+ s: its MPC socket carried nothing either way \(10 bytes from the prover and 20 to it so far\); the engine handed its MPC socket 16 bytes \(6 not yet written\) and was delivered 20$/,
    );
    // Moved at the 2nd check (4 s), quiet at the 3rd (6 s, 2 s) and the 4th (8 s, 4 s ≥ 3 s).
    expect(notary.asked()).toBe(4);
    expect(abandoned).toEqual(["setup"]);
    expect(released).toEqual(["n1"]);
  });

  test("whose notary was found gone fails as SetupFailed too: another notary may take the setup", async () => {
    const abandoned: string[] = [];
    const released: string[] = [];
    let notaryGone = () => {};
    const notary: NotarySessions = {
      ...answeringNotary([{ state: "running" }], released),
      // As the notary pool does once its health checks fail: the work waiting on the session gives up.
      whileReachable: <T>(_sessionId: string, work: Promise<T>) =>
        new Promise<T>((resolve, reject) => {
          notaryGone = () => reject(new AppError("notary_unavailable", "the notary went away during the session"));
          work.then(resolve, reject);
        }),
    };
    const setup = setupProverSession(notary, stuckEngine(abandoned), "a.test", SIZES, { checkMs: CHECK_MS }).catch((error: unknown) => error);
    await afterTimersDue(CHECK_MS);
    notaryGone();
    const failure = await setup;
    expect(failure).toBeInstanceOf(SetupFailed);
    expect(failure).toMatchObject({ code: "notary_unavailable", message: "MPC setup with the notary failed: the notary went away during the session" });
    expect(abandoned).toEqual(["setup"]);
    expect(released).toEqual(["n1"]);
  });
});
